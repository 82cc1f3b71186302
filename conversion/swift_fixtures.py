"""Fixtures for the Swift package (ios/, VoxportKit), written by the project's own Python code.

The Swift tests compare their manifest decoding, content hashes, bucket choice, npy/npz reader,
wav writer and DSP against what this module writes, so every expected value here comes from the
code Swift must agree with: `conversion.core.bundle` (BundleWriter, content_hash, verify_bundle),
`conversion.core.host.buckets`, `conversion.core.host.audio_io`, numpy's own writers, and torch
for the DSP.

Run: `python -m conversion.swift_fixtures ios/Tests/Fixtures`. The output is the same bytes on
every run (fixed seeds), with two pinned clocks: np.savez stamps every zip member with the local
time, so the write runs with zipfile's clock fixed at 1980-01-01; BundleWriter stamps
`manifest.json` with `created`, which is rewritten to a fixed value afterwards (the manifest is
not covered by any hash, and the Swift tests never read `created`).

The bundle's graph assets are synthetic folders named `*.asset` (a real `.aimodel` embeds its
creation date and writes its metadata keys in no fixed order, so it cannot be byte-stable; and
the repository ignores `*.aimodel/`). Their `functions` entries come from
`conversion.core.export.program.export_program`, the exact descriptors an export records, and their
`sha256` from `content_hash` over the folder.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import io
import json
import shutil
import struct
import sys
import tempfile
import types
import warnings
import zipfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from conversion.core import bundle as core_bundle
from conversion.core.errors import BundleIntegrityError, UserError
from conversion.core.export.program import FunctionSpec, bucketed_functions, export_program
from conversion.core.host import dsp
from conversion.core.host.audio_io import write_wav
from conversion.core.host.buckets import BucketTable
from conversion.core.threads import pin_torch_threads

INDEX = "index.json"
PINNED_CREATED = "2000-01-01T00:00:00+00:00"
_ZIP_CLOCK = (1980, 1, 1, 0, 0, 0)


# ----------------------------------------------------------------------------- plumbing


@contextlib.contextmanager
def _pinned_zip_clock() -> Iterator[None]:
    """np.savez -> ZipFile.open(name, 'w') stamps `time.localtime(time.time())`: pin it."""
    fake = types.SimpleNamespace(time=lambda: 315532800.0, localtime=lambda t=None: _ZIP_CLOCK)
    saved = zipfile.time
    zipfile.time = fake  # type: ignore[assignment]
    try:
        yield
    finally:
        zipfile.time = saved


@contextlib.contextmanager
def _zip64_limit(limit: int) -> Iterator[None]:
    """Make zipfile treat members and offsets above `limit` bytes as >4 GiB ones: the central
    directory then carries 0xFFFFFFFF sizes/offsets with a zip64 extra and the archive ends with
    zip64 end records, byte for byte as a real multi-GiB np.savez would lay them out."""
    saved = zipfile.ZIP64_LIMIT
    zipfile.ZIP64_LIMIT = limit
    try:
        yield
    finally:
        zipfile.ZIP64_LIMIT = saved


def _f32(path: Path, a) -> None:
    """Raw little-endian float32, the format the Swift tests read with RawF32."""
    arr = a.detach().cpu().numpy() if isinstance(a, torch.Tensor) else np.asarray(a)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(arr.astype("<f4").tobytes())


def _json(path: Path, payload) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=1, sort_keys=True) + "\n")


def splitmix64_bytes(seed: int, n: int) -> bytes:
    """Pseudo-random bytes both sides generate: splitmix64 outputs, little-endian, cut to n.
    (A 1 MB hash vector without shipping 1 MB of fixture.)"""
    count = -(-n // 8)
    with np.errstate(over="ignore"):
        z = np.uint64(seed) + np.arange(1, count + 1, dtype=np.uint64) * np.uint64(
            0x9E3779B97F4A7C15
        )
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return z.astype("<u8").tobytes()[:n]


# ----------------------------------------------------------------------------- sha256

_SHA_SEED = 20260101


def _write_sha256(root: Path) -> None:
    vectors = [
        {"kind": "ascii", "text": t, "sha256": hashlib.sha256(t.encode()).hexdigest()}
        for t in ("", "abc", "abcdbcdecdefdefgefghfghighijhijkijkljklmjklmnlmnomnopnopq")
    ]
    million_a = hashlib.sha256(b"a" * 10**6).hexdigest()
    vectors.append({"kind": "repeat_a", "length": 1_000_000, "sha256": million_a})
    for n in (1, 55, 56, 63, 64, 65, 119, 120, 128, 1_000_000):
        digest = hashlib.sha256(splitmix64_bytes(_SHA_SEED, n)).hexdigest()
        vectors.append({"kind": "splitmix64", "length": n, "sha256": digest})
    probe = splitmix64_bytes(_SHA_SEED, 16).hex()
    _json(root / "sha256.json", {"seed": _SHA_SEED, "first16_hex": probe, "vectors": vectors})


# ----------------------------------------------------------------------------- bundle

# Names chosen so that Python's Path order (component by component) differs from plain string
# order: "weights-extra.bin" < "weights.bin" < "weights/0.bin" as strings, but Path puts
# weights/0.bin first ("weights" < "weights-extra.bin").
_ASSET_FILES = {
    "main.hash": b"\x01" * 32,
    "main.mlirb": bytes(range(256)) * 4,
    "metadata.json": b'{\n  "assetVersion" : "2.0"\n}',
    "weights-extra.bin": b"extra",
    "weights.bin": b"dot",
    "weights/0.bin": b"zero",
    "weights/sub/1.bin": b"one",
    "Upper.txt": b"upper case sorts first",
    "empty": b"",
}


class _Scale(nn.Module):
    """A bucketed function: masked scale over [1, T]."""

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return x * mask * 2.0


class _Accumulate(nn.Module):
    """A stateful function: a non-persistent buffer mutated in forward becomes runtime state."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("acc", torch.zeros(1, 4), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.acc.add_(x)
        return self.acc * 1.0


def _functions(specs) -> dict:
    return {fn.name: export_program(fn)[1] for fn in specs}


def _graph_entries(staging: Path) -> dict[str, dict]:
    """What BundleWriter.add_graph records, for synthetic asset folders (see module doc)."""
    table = BucketTable.one_dim("T", [32, 16])
    scale = _Scale()
    bucketed = bucketed_functions(
        "main",
        scale,
        table,
        lambda b: {"x": torch.zeros(1, b["T"]), "mask": torch.ones(1, b["T"])},
        ["y"],
    )
    acc = [FunctionSpec("step", _Accumulate(), {"x": torch.zeros(1, 4)}, ["total"])]
    graphs = {}
    for name, fns, files, meta in (
        ("scale", bucketed, _ASSET_FILES, {"buckets": table.to_json()}),
        ("acc", acc, {"main.mlirb": b"acc weights", "metadata.json": b"{}"}, {}),
    ):
        # Not `.aimodel`: these folders are not loadable graphs, and the repository's
        # .gitignore drops every `*.aimodel/` (the fixtures would silently not be committed).
        asset = f"{name}.asset"
        for rel, data in files.items():
            p = staging / asset / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
        graphs[name] = {
            "asset": asset,
            "precision": "fp32",
            "sha256": core_bundle.content_hash(staging / asset),
            "functions": _functions(fns),
            "export_seconds": 0.0,
            "meta": meta,
        }
    return graphs


def _python_error(fn) -> str:
    try:
        fn()
    except (BundleIntegrityError, UserError) as e:
        return str(e)
    raise AssertionError("expected an error")


def _tamper_messages(dest: Path, work: Path) -> dict[str, dict]:
    """verify_bundle's message for each damage the Swift tests also apply (path -> <bundle>)."""
    cases = {
        "asset_byte_flipped": ("scale.asset/weights/0.bin", "flip"),
        "asset_truncated": ("scale.asset/main.mlirb", "truncate"),
        "asset_missing": ("acc.asset", "delete"),
        "file_modified": ("voices.npz", "flip"),
        "file_missing": ("table.txt", "delete"),
    }
    out = {}
    for key, (rel, how) in cases.items():
        copy = work / key
        shutil.copytree(dest, copy)
        _damage(copy / rel, how)
        manifest = core_bundle.load_manifest(copy, verify=False)
        msg = _python_error(lambda c=copy, m=manifest: core_bundle.verify_bundle(c, m))
        out[key] = {"path": rel, "damage": how, "message": msg.replace(str(copy), "<bundle>")}
    return out


def _closed_messages(dest: Path, work: Path) -> dict[str, dict]:
    """load_manifest's message for each way out of the bundle the Swift tests also build:
    refused with or without hashing (path -> <bundle>)."""
    cases = {
        "asset_file_linked_out": ("scale.asset/weights/0.bin", "link"),
        "stray_top_level_file": ("notes.txt", "add"),
        "manifest_asset_escapes": ("acc.asset", "escape"),
    }
    out = {}
    for key, (rel, how) in cases.items():
        case = work / f"closed-{key}"
        copy = case / "bundle"
        shutil.copytree(dest, copy)
        _break_out(copy, rel, how)
        msg = _python_error(lambda c=copy: core_bundle.load_manifest(c, verify=False))
        out[key] = {"path": rel, "damage": how, "message": msg.replace(str(copy), "<bundle>")}
    return out


def _break_out(bundle: Path, rel: str, how: str) -> None:
    """What the Swift test does too: `link` moves the file beside the bundle and links to it
    (same bytes, so only the link gives it away), `add` writes a file the manifest does not
    list, `escape` makes the manifest name the asset `../<rel>`."""
    p = bundle / rel
    if how == "link":
        outside = bundle.parent / "outside.bin"
        p.rename(outside)
        p.symlink_to(outside)
    elif how == "add":
        p.write_bytes(b"not in the manifest\n")
    else:
        doc = json.loads((bundle / core_bundle.MANIFEST).read_text())
        for g in doc["graphs"].values():
            if g["asset"] == rel:
                g["asset"] = f"../{rel}"
        (bundle / core_bundle.MANIFEST).write_text(json.dumps(doc, indent=2) + "\n")


def _damage(p: Path, how: str) -> None:
    """The damage the Swift test applies too: flip the middle byte, drop the second half, delete."""
    if how == "delete":
        shutil.rmtree(p) if p.is_dir() else p.unlink()
        return
    data = bytearray(p.read_bytes())
    if how == "flip":
        data[len(data) // 2] ^= 0xFF
    else:
        data = data[: len(data) // 2]
    p.write_bytes(bytes(data))


def _write_bundle(root: Path) -> None:
    dest = root / "bundle"
    rng = np.random.default_rng(7)
    voices = {
        "af_test": rng.standard_normal((4, 1, 8)).astype(np.float32),
        "names": np.array(["af_test", "bm_other"]),
    }
    with tempfile.TemporaryDirectory() as tmp:
        table = Path(tmp) / "source-table.txt"
        table.write_bytes(b"a\tb\nc\td\n")
        writer = core_bundle.BundleWriter(
            dest,
            "swift-fixture",
            overwrite=True,
            weights_sha256="ab" * 32,
            config={"sample_rate": 24000, "buckets": {"scale": [{"T": 16}, {"T": 32}]}},
            meta={"note": "fixture for ios/ (VoxportKit)"},
        )
        with _pinned_zip_clock(), writer as bw:
            bw.graphs.update(_graph_entries(bw.staging))
            bw.add_arrays("voices.npz", voices)
            bw.add_file(table, "table.txt")
        manifest_path = dest / core_bundle.MANIFEST
        doc = json.loads(manifest_path.read_text())
        doc["created"] = PINNED_CREATED
        manifest_path.write_text(json.dumps(doc, indent=2) + "\n")
        manifest = core_bundle.load_manifest(dest)  # verifies, as the Swift side will
        tamper = _tamper_messages(dest, Path(tmp))
        closed = _closed_messages(dest, Path(tmp))
    expect = {
        "format": core_bundle.FORMAT,
        "manifest_name": core_bundle.MANIFEST,
        "content_hash": {g["asset"]: g["sha256"] for g in manifest.graphs.values()},
        "path_order": {
            g["asset"]: [
                p.relative_to(dest / g["asset"]).as_posix()
                for p in sorted(q for q in (dest / g["asset"]).rglob("*") if q.is_file())
            ]
            for g in manifest.graphs.values()
        },
        "file_sha256": manifest.meta["files"],
        "single_file_content_hash": core_bundle.content_hash(dest / "table.txt"),
        "tamper": tamper,
        "closed": closed,
    }
    _json(root / "bundle_expect.json", expect)


# ----------------------------------------------------------------------------- npy / npz


def _sample_arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(11)
    f4 = rng.standard_normal((3, 4)).astype(np.float32)
    f4.flat[:4] = [-0.0, np.inf, -np.inf, np.float32(1e-45)]  # signed zero, infinities, subnormal
    return {
        "f4_2d": f4,
        "f4_3d": rng.standard_normal((2, 3, 4)).astype(np.float32),
        "f8_1d": np.array([0.1, -2.5, 1e300, -1e-310, np.pi], dtype=np.float64),
        "i4_2d": np.array([[0, -1, 2], [2**31 - 1, -(2**31), 7]], dtype=np.int32),
        "i8_1d": np.array([0, -1, 2**63 - 1, -(2**63), 123456789012], dtype=np.int64),
        "b1_2d": np.array([[True, False], [False, True]]),
        "u_1d": np.array(["af_heart", "", "é☃", "𝄞 clef", "x"]),
        "f4_0d": np.array(3.5, dtype=np.float32),
        "i8_0d": np.array(-42, dtype=np.int64),
        "f4_empty": np.zeros((0, 3), dtype=np.float32),
        "u_empty": np.zeros((0,), dtype="<U4"),
    }


def _describe(a: np.ndarray) -> dict:
    d = {"descr": a.dtype.str, "shape": list(a.shape)}
    if a.dtype.kind == "U":
        d["strings"] = a.reshape(-1).tolist()
    elif a.dtype.kind == "b":
        d["bools"] = a.reshape(-1).tolist()
    else:  # exact: the raw little-endian bytes (NaN/inf/-0 survive, no JSON float rounding)
        d["bytes_hex"] = a.astype(a.dtype.newbyteorder("<")).tobytes().hex()
    return d


def _u(raw: bytes, fmt: str, at: int) -> int:
    return struct.unpack_from(fmt, raw, at)[0]


def _zip_layout(path: Path) -> dict:
    """Facts about an archive's bytes the Swift reader must handle (asserted, then recorded)."""
    raw = path.read_bytes()
    eocd = raw.rindex(b"PK\x05\x06")
    count, cd_offset = struct.unpack_from("<H", raw, eocd + 10)[0], _u(raw, "<I", eocd + 16)
    has64 = raw[eocd - 20 : eocd - 16] == b"PK\x06\x07"
    if has64:
        rec = struct.unpack_from("<Q", raw, eocd - 20 + 8)[0]
        count, cd_offset = _u(raw, "<Q", rec + 32), _u(raw, "<Q", rec + 48)
    members, pos = [], cd_offset
    for _ in range(count):
        method, csize, usize, nlen, xlen, clen = struct.unpack_from("<H8xIIHHH", raw, pos + 10)
        offset = struct.unpack_from("<I", raw, pos + 42)[0]
        name = raw[pos + 46 : pos + 46 + nlen].decode()
        real_offset = offset
        if offset == 0xFFFFFFFF:  # zip64 extra (id 1): the 0xFFFFFFFF fields, in this order
            extra = raw[pos + 46 + nlen : pos + 46 + nlen + xlen]
            assert struct.unpack_from("<H", extra)[0] == 1
            k = [usize, csize].count(0xFFFFFFFF)
            real_offset = struct.unpack_from("<Q", extra, 4 + 8 * k)[0]
        lcsize, lusize = struct.unpack_from("<II", raw, real_offset + 18)
        members.append(
            {
                "name": name,
                "method": method,
                "central_ffffffff": [
                    f
                    for f, v in (("compressed", csize), ("size", usize), ("offset", offset))
                    if v == 0xFFFFFFFF
                ],
                "local_sizes_ffffffff": lcsize == lusize == 0xFFFFFFFF,
            }
        )
        pos += 46 + nlen + xlen + clen
    return {"zip64_end_records": has64, "members": members}


def _write_arrays(root: Path) -> None:
    arrays = _sample_arrays()
    npy = root / "npy"
    npy.mkdir(parents=True, exist_ok=True)
    with _pinned_zip_clock():
        np.savez(npy / "arrays.npz", **arrays)
        big = {"big": np.arange(300, dtype=np.float32), "tail": np.array([1, 2, 3], dtype=np.int32)}
        with _zip64_limit(64):
            np.savez(npy / "zip64.npz", **big)
        np.savez_compressed(npy / "compressed.npz", x=np.zeros(8, dtype=np.float32))
    for path, want in ((npy / "arrays.npz", arrays), (npy / "zip64.npz", big)):
        with np.load(path) as got:  # numpy itself reads what the Swift side must read
            assert sorted(got.files) == sorted(want)
            for k, v in want.items():
                nan = v.dtype.kind == "f"
                assert got[k].dtype == v.dtype and np.array_equal(got[k], v, equal_nan=nan), k
    # np.savez forces zip64 on every member: 0xFFFFFFFF local sizes even for tiny arrays.
    plain = _zip_layout(npy / "arrays.npz")
    assert not plain["zip64_end_records"]
    assert all(m["local_sizes_ffffffff"] and m["method"] == 0 for m in plain["members"])
    zip64 = _zip_layout(npy / "zip64.npz")
    assert zip64["zip64_end_records"]
    assert all(m["central_ffffffff"] for m in zip64["members"])
    assert any("offset" in m["central_ffffffff"] for m in zip64["members"])

    one = arrays["f4_2d"]
    singles = {}
    for ver in ((1, 0), (2, 0), (3, 0)):
        name = f"f4_v{ver[0]}.npy"
        with open(npy / name, "wb") as f:
            np.lib.format.write_array(f, one, version=ver)
        singles[name] = _describe(one)
    np.save(npy / "fortran.npy", np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)))
    np.save(npy / "big_endian.npy", np.arange(3, dtype=">f4"))
    _json(
        root / "npy_expect.json",
        {
            "arrays.npz": {k: _describe(v) for k, v in arrays.items()},
            "zip64.npz": {k: _describe(v) for k, v in big.items()},
            "singles": singles,
            "refused": {
                "fortran.npy": "fortran_order",
                "big_endian.npy": ">f4",
                "compressed.npz": "compressed",
            },
            "layout": {"arrays.npz": plain, "zip64.npz": zip64},
        },
    )


# ----------------------------------------------------------------------------- buckets


def _write_buckets(root: Path) -> None:
    tables = {
        "one_dim": [{"T": 256}, {"T": 128}, {"T": 512}],
        "two_dim": [{"T": 128, "L": 512}, {"T": 64, "L": 256}, {"T": 32, "L": 1024}],
    }
    queries = {
        "one_dim": [[["T", n]] for n in (1, 127, 128, 129, 256, 512, 513, 10_000, 0, -3)]
        + [[], [["T", 5], ["L", 5]], [["L", 5]]],
        "two_dim": [
            [["T", 64], ["L", 256]],
            [["L", 1000], ["T", 30]],
            [["T", 65], ["L", 10]],
            [["T", 100], ["L", 600]],
            [["L", 600], ["T", 100]],
            [["T", 200], ["L", 2000]],
            [["T", 129], ["L", 1]],
            [["T", 1], ["L", 0]],
            [["T", 10]],
        ],
    }
    out = {}
    for name, spec in tables.items():
        table = BucketTable(spec)
        cases = []
        for q in queries[name]:
            needs = dict(q)  # keyword order is message order
            try:
                b = table.select(**needs)
                cases.append({"needs": q, "label": b.label, "bucket": dict(b)})
            except UserError as e:
                cases.append({"needs": q, "error": type(e).__name__, "message": str(e)})
        out[name] = {
            "buckets": spec,
            "dims": list(table.dims),
            "sorted_labels": [b.label for b in table],
            "limits": table.limits(),
            "cases": cases,
        }
    bad_tables = {"empty": [], "mixed_dims": [{"T": 1}, {"T": 2, "L": 3}]}
    out["table_errors"] = {
        k: {"buckets": v, "message": _python_error(lambda v=v: BucketTable(v))}
        for k, v in bad_tables.items()
    }
    _json(root / "buckets.json", out)


# ----------------------------------------------------------------------------- audio


def _write_audio(root: Path) -> None:
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(997) * 0.4).astype(np.float32)
    x[:10] = [0.0, 1.0, -1.0, 1.5, -7.0, 0.5, -0.5, 1 / 32767, 1.5 / 32767, -2.5 / 32767]
    _f32(root / "audio" / "samples.f32", x)
    write_wav(root / "audio" / "pcm16.wav", x, 24000)
    _json(
        root / "audio_expect.json",
        {
            "samples": "audio/samples.f32",
            "count": int(x.size),
            "sample_rate": 24000,
            "pcm16": "audio/pcm16.wav",
        },
    )


# ----------------------------------------------------------------------------- dsp


def _hann(n: int) -> torch.Tensor:
    """The models' window: float64 Hann rounded to float32 (dsp.hann_window(n).astype(f32), as
    the Kokoro host and scipy's get_window build it)."""
    return torch.from_numpy(dsp.hann_window(n).astype(np.float32))


def _write_windows(root: Path, out: dict) -> None:
    """Plain torch.hann_window(n) computes in float32 and differs from the float64-rounded one
    by a few ulp: both are written, the Swift side must equal the latter bit for bit."""
    for n in (0, 1, 15, 16, 20, 1024):
        for periodic in (True, False):
            tag = f"{n}_{'p' if periodic else 's'}"
            f64, f32 = f"dsp/hann_{tag}.f32", f"dsp/hann_{tag}_torch32.f32"
            _f32(root / f64, torch.hann_window(n, periodic=periodic, dtype=torch.float64).float())
            _f32(root / f32, torch.hann_window(n, periodic=periodic))
            want = dsp.hann_window(n, periodic).astype(np.float32)
            assert np.array_equal(np.fromfile(root / f64, "<f4"), want)
            out["hann"].append(
                {"n": n, "periodic": periodic, "file": f64, "torch_float32_file": f32}
            )


_STFT_CASES = [  # name, n_fft, hop, win_length, signal length, window (None: the models')
    ("nfft16_hop4", 16, 4, 16, 300, None),
    ("nfft20_hop5", 20, 5, 20, 333, None),
    ("nfft20_win16", 20, 5, 16, 257, None),
    ("nfft15_hop5", 15, 5, 15, 200, None),
    ("nfft16_torchwin", 16, 4, 16, 160, "torch"),  # torch's float32 window: tolerance holds too
]


def _write_stft(root: Path, out: dict, rng: np.random.Generator) -> dict:
    specs = {}
    for name, n_fft, hop, win, n, which in _STFT_CASES:
        window = torch.hann_window(win) if which == "torch" else _hann(win)
        x = torch.from_numpy(rng.standard_normal(n).astype(np.float32))
        spec = torch.stft(
            x, n_fft, hop, win, window=window, center=True, pad_mode="reflect", return_complex=True
        )
        host = dsp.stft(x.numpy(), n_fft, hop, win, window=window)  # the project's host STFT
        assert np.abs(host - spec.numpy()).max() <= 1e-5 * np.abs(spec.numpy()).max()
        specs[name] = (spec, n_fft, hop, win, window, n)
        base = f"dsp/stft_{name}"
        for suffix, arr in (
            ("x", x), ("re", spec.real), ("im", spec.imag), ("mag", spec.abs()),
            ("phase", spec.angle()), ("window", window),
        ):  # fmt: skip
            _f32(root / f"{base}_{suffix}.f32", arr)
        out["stft"].append({
            "name": name, "n_fft": n_fft, "hop": hop, "win_length": win, "length": n,
            "bins": spec.shape[0], "frames": spec.shape[1], "signal": f"{base}_x.f32",
            "window": f"{base}_window.f32", "real": f"{base}_re.f32", "imag": f"{base}_im.f32",
            "magnitude": f"{base}_mag.f32", "phase": f"{base}_phase.f32",
        })  # fmt: skip
    return specs


def _write_istft(root: Path, out: dict, rng: np.random.Generator, specs: dict) -> None:
    def random_spec(bins: int, frames: int) -> torch.Tensor:
        re = rng.standard_normal((bins, frames)).astype(np.float32)
        im = rng.standard_normal((bins, frames)).astype(np.float32)  # DC/Nyquist imag: ignored
        return torch.complex(torch.from_numpy(re), torch.from_numpy(im))

    cases = [(f"roundtrip_{k}", *v) for k, v in specs.items()]
    cases += [
        ("random16_len", random_spec(9, 40), 16, 4, 16, _hann(16), 150),
        ("random16_none", random_spec(9, 40), 16, 4, 16, _hann(16), None),
        ("random16_pad", random_spec(9, 12), 16, 4, 16, _hann(16), 60),
        ("random20_win16", random_spec(11, 30), 20, 5, 16, _hann(16), 145),
        ("random15_odd", random_spec(8, 25), 15, 5, 15, _hann(15), 120),
    ]
    for name, spec, n_fft, hop, win, window, length in cases:
        with warnings.catch_warnings():  # random16_pad asks for more than its frames hold
            warnings.simplefilter("ignore", UserWarning)
            y = torch.istft(spec, n_fft, hop, win, window=window, center=True, length=length)
        base = f"dsp/istft_{name}"
        for suffix, arr in (("re", spec.real), ("im", spec.imag), ("y", y), ("window", window)):
            _f32(root / f"{base}_{suffix}.f32", arr)
        out["istft"].append({
            "name": name, "n_fft": n_fft, "hop": hop, "win_length": win, "length": length,
            "bins": spec.shape[0], "frames": spec.shape[1], "window": f"{base}_window.f32",
            "real": f"{base}_re.f32", "imag": f"{base}_im.f32", "output": f"{base}_y.f32",
            "output_length": y.shape[-1],
        })  # fmt: skip


_INTERP_CASES = [  # name, input length, scale_factor (Kokoro's F0 upsample is x300)
    ("up300", 64, 300.0), ("up2", 33, 2.0), ("up2_5", 40, 2.5), ("up3_7", 41, 3.7),
    ("down300", 19200, 1 / 300), ("down0_4", 101, 0.4),
]  # fmt: skip


def _write_maps(root: Path, out: dict, rng: np.random.Generator) -> None:
    """F.interpolate (linear, align_corners=False) and torch.cumsum, both float32."""
    for name, n, scale in _INTERP_CASES:
        x = torch.from_numpy(rng.standard_normal(n).astype(np.float32))
        y = F.interpolate(x[None, None], scale_factor=scale, mode="linear", align_corners=False)
        base = f"dsp/interp_{name}"
        _f32(root / f"{base}_x.f32", x)
        _f32(root / f"{base}_y.f32", y[0, 0])
        out["interpolate"].append({
            "name": name, "length": n, "scale_factor": scale, "output_length": y.shape[-1],
            "input": f"{base}_x.f32", "output": f"{base}_y.f32",
        })  # fmt: skip
    for name, x in (
        ("normal", rng.standard_normal(8000).astype(np.float32) * 3),
        ("f0_phase", (rng.uniform(80, 400, 8000) / 24000).astype(np.float32)),
    ):
        y = torch.cumsum(torch.from_numpy(x), dim=0)
        base = f"dsp/cumsum_{name}"
        _f32(root / f"{base}_x.f32", x)
        _f32(root / f"{base}_y.f32", y)
        out["cumsum"].append({
            "name": name, "length": int(x.size), "input": f"{base}_x.f32",
            "output": f"{base}_y.f32",
        })  # fmt: skip


def _write_dsp(root: Path) -> None:
    rng = np.random.default_rng(3)
    out: dict[str, list] = {"hann": [], "stft": [], "istft": [], "interpolate": [], "cumsum": []}
    _write_windows(root, out)
    specs = _write_stft(root, out, rng)
    _write_istft(root, out, rng, specs)
    _write_maps(root, out, rng)
    _json(root / "dsp.json", out)


# ----------------------------------------------------------------------------- models


# Each model's host writes its own fixtures under `<model>/`: `conversion.<model>.swift_fixtures`
# has `write_fixtures(root, zip_clock)`.
MODEL_FIXTURES = ("kokoro", "audio8_tts", "chatterbox")


def _write_models(root: Path) -> None:
    """Every model host's fixtures (`<model>/`), written by that host's code itself."""
    for model in MODEL_FIXTURES:
        module = importlib.import_module(f"conversion.{model}.swift_fixtures")
        module.write_fixtures(root / model, _pinned_zip_clock)


# ----------------------------------------------------------------------------- entry


def _clear_previous(out_dir: Path) -> None:
    """Remove what a previous run listed in its index (never anything else)."""
    index = out_dir / INDEX
    if not index.is_file():
        return
    for rel in json.loads(index.read_text())["files"]:
        (out_dir / rel).unlink(missing_ok=True)
    shutil.rmtree(out_dir / "bundle", ignore_errors=True)
    for model in MODEL_FIXTURES:
        shutil.rmtree(out_dir / model, ignore_errors=True)


def write_fixtures(out_dir: Path) -> dict:
    """Write every Swift fixture under `out_dir`; returns {relative path: size in bytes}."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    _clear_previous(out_dir)
    # torch's reductions (istft's overlap-add) round differently with 1 and 2 threads: pin one,
    # as every voxport command does, so the bytes do not depend on who called first.
    pin_torch_threads()
    torch.manual_seed(0)
    _write_sha256(out_dir)
    _write_bundle(out_dir)
    _write_arrays(out_dir)
    _write_buckets(out_dir)
    _write_audio(out_dir)
    _write_dsp(out_dir)
    _write_models(out_dir)
    files = {
        p.relative_to(out_dir).as_posix(): p.stat().st_size
        for p in sorted(out_dir.rglob("*"))
        if p.is_file() and p.name != INDEX
    }
    _json(out_dir / INDEX, {"files": files, "total_bytes": sum(files.values())})
    return files


def _tree(root: Path) -> dict[str, Path]:
    return {p.relative_to(root).as_posix(): p for p in root.rglob("*") if p.is_file()}


def compare_fixtures(fresh: Path, committed: Path, rel_tol: float = 1e-6) -> list[str]:
    """How a freshly written fixture folder differs from the committed one, one line per file
    ([] when they agree): integers and text exactly; float arrays (`.f32` files, the float
    members of `.npz` files) within `rel_tol` of their largest committed magnitude (machines
    differ in SIMD paths: an AMD EPYC and the machine that wrote them differ by 1.5e-7)."""
    new, old = _tree(Path(fresh)), _tree(Path(committed))
    problems = [f"{rel}: missing from {committed}" for rel in sorted(set(new) - set(old))]
    problems += [f"{rel}: no longer written" for rel in sorted(set(old) - set(new))]
    for rel in sorted(set(new) & set(old)):
        a, b = new[rel].read_bytes(), old[rel].read_bytes()
        if a == b:
            continue
        if rel.endswith(".npz"):
            problems += [f"{rel}: {p}" for p in _npz_differences(a, b, rel_tol)]
            continue
        if not rel.endswith(".f32") or len(a) != len(b) or len(a) % 4:
            problems.append(f"{rel}: differs")
            continue
        why = _float_difference(np.frombuffer(a, "<f4"), np.frombuffer(b, "<f4"), rel_tol)
        if why:
            problems.append(f"{rel}: {why}")
    return problems


def _float_difference(x: np.ndarray, y: np.ndarray, rel_tol: float) -> str | None:
    """Why float array `x` is not `y` within `rel_tol` of max|y| (None when it is)."""
    scale = float(np.abs(y).max()) if y.size else 1.0
    scale = scale or 1.0
    err = float(np.abs(x.astype(np.float64) - y.astype(np.float64)).max()) if y.size else 0.0
    if not err <= rel_tol * scale:  # NaN differences fail too
        return f"max|Δ| {err:.3g} beyond {rel_tol:g} of max|ref| {scale:.3g}"
    return None


def _npz_differences(a: bytes, b: bytes, rel_tol: float) -> list[str]:
    """An `.npz` pair member by member: names, dtypes and shapes exactly, then the values."""
    x, y = np.load(io.BytesIO(a)), np.load(io.BytesIO(b))
    if sorted(x.files) != sorted(y.files):
        return [f"arrays {sorted(x.files)} != {sorted(y.files)}"]
    out = []
    for k in sorted(y.files):
        u, v = x[k], y[k]
        if u.dtype != v.dtype or u.shape != v.shape:
            out.append(f"{k}: {u.dtype}{list(u.shape)} != {v.dtype}{list(v.shape)}")
        elif v.dtype.kind == "f":
            why = _float_difference(u, v, rel_tol)
            if why:
                out.append(f"{k}: {why}")
        elif not np.array_equal(u, v):
            out.append(f"{k}: differs")
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m conversion.swift_fixtures OUT_DIR", file=sys.stderr)
        return 2
    files = write_fixtures(Path(argv[0]))
    print(f"wrote {len(files)} files, {sum(files.values())} bytes, to {argv[0]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
