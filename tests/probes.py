"""Hostile and careless input, tried on the `voxport` program as a user would (issue 21): each
probe runs the real CLI in its own process, in a scratch folder, and is *clean* when the
program refuses in one line (`voxport: error: …`, the exit code it names, no traceback), fast
(before any model loads), and leaves what it pointed at as it was.

    python -m tests.probes            # the cheap set (what CI runs: tests/test_probes.py)
    python -m tests.probes --full     # also those that need a Kokoro bundle, or repeat a check

Prints one row per probe and `probes: N tried, N clean, N failed`; exit 1 if any failed.
The worker protocol's probes are a fuzz test of their own (tests/test_worker_fuzz.py).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: A refusal "before any model loads" on this 2-core machine: the CLI's own start (~3 s, torch
#: imported by the registry) and a check, never a load or an export (those take 25 s and more).
FAST_S = 20.0

Check = Callable[[Path], "str | None"]  # the problem it found, or None


@dataclass
class Probe:
    name: str
    argv: list[str]  # the CLI's arguments; "{d}" is the scratch folder
    says: str  # a fragment of the one-line error
    prepare: Callable[[Path], None] | None = None
    after: list[Check] = field(default_factory=list)
    code: int = 2
    within: float = FAST_S  # seconds
    full: bool = False  # `--full` only: needs an exported Kokoro bundle, or repeats a check
    line: str = "voxport: error:"  # how the one line starts ("voxport: terminated" for a signal)
    # A signal sent to the program once something under the scratch folder matches this glob
    # (and `signal_delay` s more): the probe is then of what the program leaves on its way out.
    signal_at: str | None = None
    sends: int = signal.SIGTERM
    signal_delay: float = 0.5


@dataclass
class Outcome:
    probe: Probe
    problems: list[str]
    seconds: float

    @property
    def clean(self) -> bool:
        return not self.problems


# -- what a probe leaves ---------------------------------------------------------------------


def still(kind: str, rel: str) -> Check:
    """`rel` (under the scratch folder, or absolute) is still a `kind`: fifo, link, chardev."""
    test = {"fifo": stat.S_ISFIFO, "link": stat.S_ISLNK, "chardev": stat.S_ISCHR}[kind]

    def check(d: Path) -> str | None:
        p = Path(rel) if rel.startswith("/") else d / rel
        try:
            mode = os.lstat(p).st_mode
        except FileNotFoundError:
            return f"{p} is gone"
        return None if test(mode) else f"{p} is no longer a {kind}"

    return check


def unchanged(rel: str, text: str) -> Check:
    def check(d: Path) -> str | None:
        p = d / rel
        return None if p.is_file() and p.read_text() == text else f"{rel} was changed or removed"

    return check


def absent(pattern: str) -> Check:
    """Nothing matching `pattern` under the scratch folder or the temp folder."""

    def check(d: Path) -> str | None:
        found = [*d.rglob(pattern), *Path(tempfile.gettempdir()).glob(f"*/{pattern}")]
        return f"{pattern} was made: {found[0]}" if found else None

    return check


# -- what a probe starts from ----------------------------------------------------------------


def _core_bundle(d: Path) -> Path:
    """The self-test bundle (its small graphs), exported once per run beside the probes'
    folders and copied into `d`."""
    cached = d.parent / "_core" / "b"
    if not cached.exists():
        subprocess.run(
            [
                sys.executable,
                "-m",
                "conversion.cli.main",
                "export",
                "core",
                "--output-dir",
                str(cached),
            ],
            cwd=REPO,
            check=True,
            capture_output=True,
            timeout=600,
        )
    shutil.copytree(cached, d / "b", symlinks=True)
    return d / "b"


def _edit(d: Path, edit: Callable[[dict], None]) -> None:
    b = _core_bundle(d)
    doc = json.loads((b / "manifest.json").read_text())
    edit(doc)
    (b / "manifest.json").write_text(json.dumps(doc))


def _rename_first_graph(new: str) -> Callable[[dict], None]:
    def edit(doc: dict) -> None:
        first = sorted(doc["graphs"])[0]
        doc["graphs"][new] = doc["graphs"].pop(first)

    return edit


def _link_out(d: Path) -> None:
    b = _core_bundle(d)
    asset = sorted(b.glob("*.aimodel"))[0]
    inner = sorted(p for p in asset.rglob("*") if p.is_file())[0]
    inner.rename(d / "moved.bin")
    inner.symlink_to(d / "moved.bin")  # the same bytes: its hash alone would pass


def _leak(d: Path) -> None:
    (_core_bundle(d) / "leak.txt").symlink_to("/etc/passwd")


def _precious(d: Path) -> None:
    (d / "mine").mkdir()
    (d / "mine" / "precious.txt").write_text("x")


def _fifo(d: Path) -> None:
    os.mkfifo(d / "f")


def _symlink(d: Path) -> None:
    (d / "target.txt").write_text("keep")
    (d / "link").symlink_to(d / "target.txt")


def _empty_voice(d: Path) -> None:
    (d / "empty.pt").write_bytes(b"")


def _kokoro_bundle(d: Path) -> Path:
    """A copy of the reduced Kokoro bundle (`bundles/kokoro-fp32-reduced`, exported first if
    absent: minutes) in `d`, for the tampering probes (`--full`)."""
    made = REPO / "bundles" / "kokoro-fp32-reduced"
    if not made.exists():
        subprocess.run(
            [sys.executable, "-m", "conversion.cli.main", "export", "kokoro", "--config",
             "reduced"],
            cwd=REPO, check=True, capture_output=True, timeout=3600,
        )  # fmt: skip
    shutil.copytree(made, d / "b", symlinks=True)
    return d / "b"


def _flip_asset_byte(d: Path) -> None:
    b = _kokoro_bundle(d)
    f = max((p for p in (b / "vocoder.aimodel").rglob("*") if p.is_file()), key=os.path.getsize)
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 0xFF
    f.write_bytes(bytes(data))


def _link_host_file(d: Path) -> None:
    b = _kokoro_bundle(d)
    (b / "voices.npz").rename(d / "voices.npz")
    (b / "voices.npz").symlink_to(d / "voices.npz")


def _stray_in_kokoro(d: Path) -> None:
    (_kokoro_bundle(d) / "notes.txt").write_text("mine")


def _fixtures_victim(d: Path) -> None:
    """Issue 29's repro: an index naming ../victim.txt, a user's file in fx/kokoro/."""
    (d / "fx" / "kokoro").mkdir(parents=True)
    (d / "fx" / "kokoro" / "notes.txt").write_text("mine")
    (d / "victim.txt").write_text("keep")
    (d / "fx" / "index.json").write_text('{"files": ["../victim.txt"]}')


def _fixtures_index(raw: bytes) -> Callable[[Path], None]:
    def prepare(d: Path) -> None:
        (d / "fx").mkdir()
        (d / "fx" / "index.json").write_bytes(raw)

    return prepare


def bundle_kept(d: Path) -> str | None:
    """A refused `--bundle` is left as it was: not re-exported (its manifest is the copy's)."""
    m = d / "b" / "manifest.json"
    made = REPO / "bundles" / "kokoro-fp32-reduced" / "manifest.json"
    return None if m.read_bytes() == made.read_bytes() else "the --bundle was exported over"


# issue 29: outputs vs inputs, one-line errors (what the probes below start from)

_LONG = "a" * 300  # past NAME_MAX (255 bytes)


def _wav_bytes(rate: int = 16_000, frames: int = 32_000) -> bytes:
    """A mono 16-bit wav (a quiet tone), made with the standard library only."""
    import io
    import math
    import struct
    import wave

    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(
            b"".join(struct.pack("<h", int(3000 * math.sin(i / 7))) for i in range(frames))
        )
    return buf.getvalue()


def _file(rel: str, data: bytes) -> Callable[[Path], None]:
    def prepare(d: Path) -> None:
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_bytes(data)

    return prepare


def same_bytes(rel: str, data: bytes) -> Check:
    def check(d: Path) -> str | None:
        p = d / rel
        return None if p.is_file() and p.read_bytes() == data else f"{rel} was changed or removed"

    return check


def _manifest_bytes(raw: bytes) -> Callable[[Path], None]:
    def prepare(d: Path) -> None:
        (_core_bundle(d) / "manifest.json").write_bytes(raw)

    return prepare


def _key_edited(model: str) -> Callable[[Path], None]:
    """An intact bundle whose manifest key was edited by hand (hashes intact): made, it says,
    from `model`'s weights ff…ff."""

    def prepare(d: Path) -> None:
        _edit(d, lambda doc: doc.update(key={"model": model, "weights_sha256": "ff" * 32}))

    return prepare


def key_kept(d: Path) -> str | None:
    """The hand-edited bundle was not exported over."""
    doc = json.loads((d / "b" / "manifest.json").read_text())
    kept = doc["key"].get("weights_sha256") == "ff" * 32
    return None if kept else "the --bundle was exported over"


def _voice_pack(kind: str) -> Callable[[Path], None]:
    def prepare(d: Path) -> None:
        import torch

        shape = (510, 1, 256)
        pack = (
            torch.zeros(shape, dtype=torch.int32)
            if kind == "int32"
            else torch.full(shape, float("nan"))
        )
        torch.save(pack, d / "v.pt")

    return prepare


# issue 29: locks, signals, program files

# scratch folder -> (when the signal went, the pids it stopped: the program and its children)
_SIGNALLED: dict[Path, tuple[float, list[int]]] = {}


def _signal_when(probe: Probe, proc: subprocess.Popen, d: Path) -> None:
    """Send `probe.sends` to `proc` once `probe.signal_at` matches under `d` (and
    `signal_delay` later), noting its pid and its children's for `left_nothing`."""
    import psutil

    deadline = time.monotonic() + 300
    while not any(d.rglob(probe.signal_at)) and time.monotonic() < deadline:
        if proc.poll() is not None:
            return  # it ended first: the probe fails on its exit code
        time.sleep(0.01)
    time.sleep(probe.signal_delay)
    try:
        pids = [proc.pid, *(c.pid for c in psutil.Process(proc.pid).children(recursive=True))]
    except psutil.Error:
        return
    _SIGNALLED[d] = (time.monotonic(), pids)
    proc.send_signal(probe.sends)


def left_nothing(d: Path) -> str | None:
    """A second after the signal: none of the stopped processes runs, none left a temp
    folder, and no hidden file (a lock, a staging folder, a partial output) is left under the
    scratch folder."""
    import psutil

    if d not in _SIGNALLED:
        return "the signal was never sent"
    sent, pids = _SIGNALLED[d]
    time.sleep(max(0.0, sent + 1.0 - time.monotonic()))
    running = [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != "zombie"]
    if running:
        return f"pids {running} still run a second after the signal"
    temp = Path(tempfile.gettempdir())
    mine = {str(p) for p in pids}
    folders = [f.name for f in temp.glob("voxport-*-*-*") if f.name.split("-")[2] in mine]
    left = sorted(folders) + sorted(str(f.relative_to(d)) for f in d.rglob(".*"))
    return f"left behind: {left}" if left else None


def gone(rel: str) -> Check:
    """Nothing at `rel` under the scratch folder."""

    def check(d: Path) -> str | None:
        return f"{rel} is there" if os.path.lexists(d / rel) else None

    return check


def _lock_file(kind: str) -> Callable[[Path], None]:
    """The core bundle in `d/b`, and `d/.b.lock` made a `kind`: a link to a missing path
    (`d/missing`), a link to the user's `d/mine.txt`, the user's own file, a FIFO."""

    def prepare(d: Path) -> None:
        _core_bundle(d)
        lock = d / ".b.lock"
        (d / "mine.txt").write_text("mine")
        if kind == "link-to-missing":
            lock.symlink_to(d / "missing")
        elif kind == "link-to-a-users-file":
            lock.symlink_to(d / "mine.txt")
        elif kind == "a-users-file":
            lock.write_text("mine")
        else:
            os.mkfifo(lock)

    return prepare


def _lock_kept(kind: str) -> list[Check]:
    checks = [unchanged("mine.txt", "mine"), gone("missing")]
    if kind.startswith("link"):
        checks.append(still("link", ".b.lock"))
    elif kind == "a-users-file":
        checks.append(unchanged(".b.lock", "mine"))
    else:
        checks.append(still("fifo", ".b.lock"))
    return checks


def _bad_program(how: str, bundle: Callable[[Path], Path], asset: str) -> Callable[[Path], None]:
    """A bundle whose `asset` program is cut in half or random bytes, re-hashed to match (its
    manifest and its main.hash): it passes the bundle's verification."""

    def prepare(d: Path) -> None:
        import hashlib

        from conversion.core.bundle import content_hash

        b = bundle(d)
        program = b / f"{asset}.aimodel" / "main.mlirb"
        data = program.read_bytes()
        data = data[: len(data) // 2] if how == "truncated" else os.urandom(len(data))
        program.write_bytes(data)
        program.with_suffix(".hash").write_bytes(hashlib.sha256(data).digest())
        doc = json.loads((b / "manifest.json").read_text())
        doc["graphs"][asset]["sha256"] = content_hash(b / f"{asset}.aimodel")
        (b / "manifest.json").write_text(json.dumps(doc))

    return prepare


def no_lock_left(d: Path) -> str | None:
    return "the bundle's lock file was left" if (d / ".b.lock").exists() else None


def _locks_signals_programs() -> list[Probe]:
    """The probes of issue 29's items 2, 4 and 5."""
    lock_kinds = ("link-to-missing", "link-to-a-users-file", "a-users-file", "a-fifo")
    says = {"a-users-file": "other contents", "a-fifo": "FIFO"}
    export_b = ["export", "core", "--output-dir", "{d}/b"]
    kokoro = ["speak", "kokoro", _TEXT * 6, *_REDUCED, "--bundle", "{d}/b", "-o", "{d}/x.wav"]
    return [
        # 2. the bundle lock is voxport's own file: never followed, written or removed
        *(
            Probe(
                f"serve-lock-file-{kind}",
                ["serve", "{d}/b", "--graphs="],
                says.get(kind, "symbolic link"),
                _lock_file(kind),
                _lock_kept(kind),
            )
            for kind in lock_kinds
        ),
        Probe(
            "export-overwrite-lock-file-link-to-missing",
            [*export_b, "--overwrite"],
            "symbolic link",
            _lock_file("link-to-missing"),
            _lock_kept("link-to-missing"),
        ),
        # 5. a program file the runtime cannot read, its hashes redone: refused, no abort
        *(
            Probe(
                f"serve-program-{how}-rehashed",
                ["serve", "{d}/b"],
                "not a Core AI program",
                _bad_program(how, _core_bundle, "mlp"),
                [no_lock_left],
            )
            for how in ("truncated", "garbage")
        ),
        Probe(
            "speak-kokoro-bundle-program-truncated-rehashed",
            kokoro,
            "not a Core AI program",
            _bad_program("truncated", _kokoro_bundle, "vocoder"),
            [no_lock_left, gone("x.wav")],
            within=60.0,  # hashes the weights (the bundle's key) and the bundle
            full=True,
        ),
        # 4. SIGTERM and SIGINT: the clean-up of a normal exit, within a second
        Probe(
            "sigterm-mid-export",
            export_b,
            "SIGTERM",
            after=[left_nothing, gone("b")],
            code=143,
            line="voxport: terminated",
            within=120.0,
            signal_at=".b.tmp-*",
            signal_delay=1.0,
        ),
        Probe(
            "sigint-mid-export",
            export_b,
            "interrupted",
            after=[left_nothing, gone("b")],
            code=130,
            line="voxport: interrupted",
            within=120.0,
            signal_at=".b.tmp-*",
            signal_delay=1.0,
            sends=signal.SIGINT,
            full=True,  # the same clean-up as SIGTERM's
        ),
        Probe(
            "sigterm-speak-kokoro-streaming",
            [*kokoro, "--stream", "--workers", "2"],
            "SIGTERM",
            lambda d: _kokoro_bundle(d) and None,
            [left_nothing, gone("x.wav")],
            code=143,
            line="voxport: terminated",
            within=300.0,
            full=True,
            signal_at=".x.wav.partial-*",
        ),
    ]


# -- the catalogue ---------------------------------------------------------------------------

_TEXT = "Hello there."
_MODELS = ("kokoro", "chatterbox", "audio8_tts", "chatterbox_turbo")
_REDUCED = ["--config", "reduced"]


def catalogue() -> list[Probe]:
    doctor = ["doctor", "--no-selftest", "--json"]
    probes = [
        # 1. outputs never replace what they point at
        Probe("json-into-fifo", [*doctor, "{d}/f"], "FIFO", _fifo, [still("fifo", "f")]),
        Probe(
            "json-into-symlink",
            [*doctor, "{d}/link"],
            "symbolic link",
            _symlink,
            [still("link", "link"), unchanged("target.txt", "keep")],
        ),
        Probe(
            "json-into-dev-full",
            [*doctor, "/dev/full"],
            "device",
            None,
            [still("chardev", "/dev/full")],
        ),
        Probe(
            "wav-into-fifo",
            ["speak", "kokoro", _TEXT, *_REDUCED, "-o", "{d}/f"],
            "FIFO",
            _fifo,
            [still("fifo", "f")],
        ),
        # 2. --overwrite replaces only a bundle
        Probe(
            "overwrite-a-users-folder",
            ["export", "core", "--output-dir", "{d}/mine", "--overwrite"],
            "not a voxport bundle",
            _precious,
            [unchanged("mine/precious.txt", "x")],
        ),
        # 3. a bundle is a closed world
        Probe(
            "serve-graph-named-out",
            ["serve", "{d}/b"],
            "not a plain name",
            lambda d: _edit(d, _rename_first_graph("../../../outside/ESCAPED")),
            [absent("ESCAPED*")],
        ),
        Probe(
            "serve-graph-named-absolute",
            ["serve", "{d}/b"],
            "not a plain name",
            lambda d: _edit(d, _rename_first_graph(f"{tempfile.gettempdir()}/ESCAPED")),
            [absent("ESCAPED*")],
        ),
        Probe(
            "serve-asset-up-a-folder",
            ["serve", "{d}/b"],
            "not a plain name",
            lambda d: _edit(
                d, lambda doc: next(iter(doc["graphs"].values())).update(asset="../x.aimodel")
            ),
        ),
        Probe("serve-asset-file-linked-out", ["serve", "{d}/b"], "symbolic link", _link_out),
        Probe("serve-stray-file", ["serve", "{d}/b"], "not listed in its manifest", _leak),
        Probe(
            "sideload-a-link-to-passwd",
            [
                "sideload",
                "core",
                "--dry-run",
                "--device",
                "X",
                "--app-id",
                "a.b",
                "--bundle",
                "{d}/b",
            ],
            "not listed in its manifest",
            _leak,
        ),
        # 5. a --bundle that fails its verification is refused, never exported over
        *(
            Probe(
                f"speak-kokoro-bundle-{name}",
                ["speak", "kokoro", _TEXT, *_REDUCED, "--bundle", "{d}/b", "-o", "{d}/x.wav"],
                says,
                prepare,
                [bundle_kept],
                within=60.0,  # hashes the weights (the bundle's key) and the bundle: no export
                full=True,
            )
            for name, prepare, says in (
                ("asset-byte-flipped", _flip_asset_byte, "fails its verification"),
                ("host-file-linked", _link_host_file, "symbolic link"),
                ("stray-file", _stray_in_kokoro, "not listed in its manifest"),
            )
        ),
        # 9. one-line errors before anything loads
        *(
            Probe(
                f"{verb}-{m}-seed-{s}",
                [verb, m, *extra, *_REDUCED, "--seed", s],
                "--seed",
                full=verb == "gate",  # the same check as speak's: CI tries speak's
            )
            for m in _MODELS
            for verb, extra in (("speak", [_TEXT, "-o", "{d}/x.wav"]), ("gate", []))
            for s in ("-1", "1e20")
        ),
        *(
            Probe(
                f"speak-{m}-speed-{v}",
                ["speak", m, _TEXT, *_REDUCED, "--speed", v, "-o", "{d}/x.wav"],
                "--speed",
            )
            for m in ("kokoro",)
            for v in ("0", "-1", "nan", "inf")
        ),
        *(
            Probe(
                f"speak-{m}-non-utf8",
                ["speak", m, "\udcff\udcfe", *_REDUCED, "-o", "{d}/x.wav"],
                "UTF-8",
            )
            for m in _MODELS
        ),
        Probe(
            "speak-kokoro-weights-missing-folder",
            ["speak", "kokoro", _TEXT, "--weights", "{d}/w/nonexistent", "-o", "{d}/x.wav"],
            "nonexistent",
        ),
        Probe(
            "speak-kokoro-empty-voice-pack",
            ["speak", "kokoro", _TEXT, *_REDUCED, "--voice", "{d}/empty.pt", "-o", "{d}/x.wav"],
            "empty",
            _empty_voice,
        ),
        # 1. a failed run removes the folders it made for -o
        Probe(
            "failed-speak-removes-made-parents",
            ["speak", "kokoro", _TEXT, *_REDUCED, "--speed", "0", "-o", "{d}/new/sub/x.wav"],
            "--speed",
            None,
            [lambda d: f"made {d}/new and left it" if (d / "new").exists() else None],
        ),
        # issue 29: the fixtures folder (a run replaces only what it wrote, refuses the rest)
        Probe(
            "fixtures-index-names-a-file-outside",
            ["fixtures", "swift", "--out", "{d}/fx"],
            "not a fixtures folder",
            _fixtures_victim,
            [unchanged("victim.txt", "keep"), unchanged("fx/kokoro/notes.txt", "mine")],
        ),
        *(
            Probe(f"fixtures-out-{name}", ["fixtures", "swift", "--out", "{d}/fx"], says, prep)
            for name, prep, says in (
                ("a-file", lambda d: (d / "fx").write_text("x"), "not a folder"),
                ("a-fifo", lambda d: os.mkfifo(d / "fx"), "not a folder"),
                ("a-dangling-link", lambda d: (d / "fx").symlink_to(d / "none"), "symbolic link"),
                ("index-not-json", _fixtures_index(b"{"), "not JSON"),
                ("index-1200-deep", _fixtures_index(b"[" * 1200 + b"]" * 1200), "nested"),
            )
        ),
        # issue 29: outputs vs inputs, one-line errors
        Probe(
            "speak-ref-is-the-output",
            ["speak", "chatterbox", _TEXT, "--weights", "random", *_REDUCED, "--ref", "{d}/r.wav",
             "-o", "{d}/r.wav"],
            "is the --ref",
            _file("r.wav", _wav_bytes()),
            [same_bytes("r.wav", _wav_bytes())],
        ),
        Probe(
            "speak-voice-pack-is-the-output",
            ["speak", "kokoro", _TEXT, *_REDUCED, "--voice", "{d}/v.pt", "-o", "{d}/sub/../v.pt"],
            "is the --voice",
            _file("v.pt", b"a voice pack"),
            [same_bytes("v.pt", b"a voice pack")],
        ),
        Probe(
            "speak-output-in-the-weights-folder",
            ["speak", "kokoro", _TEXT, "--weights", "{d}/w", "-o", "{d}/w/kokoro-v1_0.pth"],
            "inside the weights folder",
            _file("w/kokoro-v1_0.pth", b"weights"),
            [same_bytes("w/kokoro-v1_0.pth", b"weights")],
        ),
        Probe(
            "gate-json-and-markdown-one-file",
            ["gate", "core", "--json", "{d}/x", "--markdown", "{d}/./x"],
            "name the same file",
            None,
            [absent("x")],
        ),
        Probe(
            "speak-output-into-its-bundle",
            ["speak", "kokoro", _TEXT, *_REDUCED, "--bundle", "{d}/b", "-o", "{d}/b/x.wav"],
            "inside --bundle",
            _core_bundle,
            [absent("x.wav")],
        ),
        Probe(
            "export-into-a-bundle",
            ["export", "core", "--output-dir", "{d}/b/sub"],
            "inside the bundle",
            _core_bundle,
            [lambda d: f"{d}/b/sub was made" if (d / "b" / "sub").exists() else None],
        ),
        Probe(
            "export-over-the-working-folder",
            ["export", "core", "--output-dir", str(REPO), "--overwrite"],
            "holds the working folder",
        ),
        Probe(
            "gate-bundle-key-edited-by-hand",
            ["gate", "audio8_tts", "--weights", "random", *_REDUCED, "--bundle", "{d}/b"],
            "made from other arguments",
            _key_edited("audio8_tts"),
            [key_kept],
            within=60.0,  # the random snapshot's hash (no load, no export)
        ),
        Probe(
            "sweep-weights-seeds-into-one-bundle",
            ["gate", "chatterbox", "--weights", "random", "--weights-seeds", "0,1", "--bundle",
             "{d}/mine"],
            "--weights-seeds with --bundle",
        ),
        *(
            Probe(f"serve-manifest-{name}", ["serve", "{d}/b"], says, _manifest_bytes(raw),
                  full=name == "a-string")
            for name, raw, says in (
                ("a-list", b"[1, 2]", "JSON list"),
                ("a-string", b'"x"', "JSON string"),
                ("not-utf8", b"\xff\xfe{", "not UTF-8"),
                ("1200-deep", b"[" * 1200 + b"]" * 1200, "nested too deeply"),
            )
        ),
        Probe(
            "sideload-manifest-1200-deep",
            ["sideload", "core", "--dry-run", "--device", "X", "--app-id", "a.b", "--bundle",
             "{d}/b"],
            "nested too deeply",
            _manifest_bytes(b"[" * 1200 + b"]" * 1200),
        ),
        Probe(
            "speak-workers-10-to-the-15",
            ["speak", "kokoro", _TEXT, *_REDUCED, "-o", "{d}/x.wav", "--workers",
             "1000000000000000"],
            "--workers",
        ),
        *(
            Probe(f"bench-{m}-repeats-{n}", ["bench", m, *w, "--repeats", n], "--repeats",
                  full=m != "core")
            for m, w in (("core", []), ("chatterbox", ["--weights", "random"]))
            for n in ("-1", "0")
        ),
        Probe("gate-json-empty", ["gate", "core", "--json", ""], "--json is empty"),
        Probe("speak-output-empty", ["speak", "kokoro", _TEXT, *_REDUCED, "-o", ""], "-o is empty"),
        *(
            Probe(f"name-past-name-max-{flag}", argv, "over the file system's 255 bytes",
                  full=flag != "o")
            for flag, argv in (
                ("o", ["speak", "kokoro", _TEXT, *_REDUCED, "-o", f"{{d}}/{_LONG}.wav"]),
                ("json", ["gate", "core", "--json", f"{{d}}/{_LONG}.json"]),
                ("output-dir", ["export", "core", "--output-dir", f"{{d}}/{_LONG}"]),
            )
        ),
        Probe("phonemize-5000-digits", ["phonemize", "kokoro", "1" * 5000], "5000 digits"),
        Probe(
            "speak-voice-5000-characters",
            ["speak", "kokoro", _TEXT, *_REDUCED, "-o", "{d}/x.wav", "--voice", "a" * 5000],
            "(5000 characters)",
        ),
        Probe(
            "gate-weights-file-a-folder",
            ["gate", "kokoro", "--weights", "{d}/w"],
            "is a folder",
            lambda d: (d / "w" / "kokoro-v1_0.pth").mkdir(parents=True),
        ),
        *(
            Probe(
                f"speak-voice-pack-{kind}",
                ["speak", "kokoro", _TEXT, *_REDUCED, "-o", "{d}/x.wav", "--voice", "{d}/v.pt"],
                says,
                _voice_pack(kind),
                full=kind == "nan",
            )
            for kind, says in (("int32", "holds torch.int32"), ("nan", "NaN"))
        ),
        *(
            Probe(
                f"speak-{m}-reference-at-1-hz",
                ["speak", m, _TEXT, "--weights", "random", *_REDUCED, "--ref", "{d}/r.wav",
                 *(["--ref-text", "hi"] if m == "audio8_tts" else []), "-o", "{d}/x.wav"],
                "sampled at 1 Hz",
                _file("r.wav", _wav_bytes(rate=1, frames=10)),
                full=m != "chatterbox",
            )
            for m in ("chatterbox", "audio8_tts")
        ),
        Probe(
            "gate-chatterbox-mutants-nope",
            ["gate", "chatterbox", "--weights", "random", *_REDUCED, "--mutants", "nope"],
            "unknown fault(s) nope",
        ),
        Probe(
            "speak-kokoro-speed-1e-300",
            ["speak", "kokoro", _TEXT, *_REDUCED, "--speed", "1e-300", "-o", "{d}/x.wav"],
            "--speed",
        ),
    ]  # fmt: skip
    probes += _locks_signals_programs()  # issue 29: locks, signals, program files
    return probes


# -- running -----------------------------------------------------------------------------------


def run_probe(probe: Probe, root: Path) -> Outcome:
    d = root / probe.name
    d.mkdir(parents=True)
    problems: list[str] = []
    if probe.prepare is not None:
        probe.prepare(d)
    argv = [a.replace("{d}", str(d)) for a in probe.argv]
    start = time.perf_counter()
    r = subprocess.Popen(
        [sys.executable, "-m", "conversion.cli.main", *argv],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONIOENCODING": "utf-8:surrogateescape"},
    )
    if probe.signal_at is not None:
        threading.Thread(target=_signal_when, args=(probe, r, d), daemon=True).start()
    try:
        _, stderr = r.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        r.kill()
        _, stderr = r.communicate()
    seconds = time.perf_counter() - start
    err = stderr.decode(errors="replace").strip().splitlines()
    if r.returncode != probe.code:
        problems.append(f"exit {r.returncode}, not {probe.code}")
    if any("Traceback" in line for line in err):
        problems.append("a traceback")
    errors = [line for line in err if line.startswith(probe.line)]
    if len(errors) != 1:
        problems.append(f"{len(errors)} error lines: {err[-3:]}")
    elif probe.says.lower() not in errors[0].lower():
        problems.append(f"the error does not say {probe.says!r}: {errors[0]}")
    if seconds > probe.within:
        problems.append(f"refused after {seconds:.0f} s (not before loading)")
    for check in probe.after:
        found = check(d)
        if found:
            problems.append(found)
    return Outcome(probe, problems, seconds)


def run(full: bool = False, only: str | None = None, out=sys.stdout) -> list[Outcome]:
    probes = [p for p in catalogue() if (full or not p.full) and (only is None or only in p.name)]
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="voxport-probes-") as tmp:
        for i, probe in enumerate(probes, 1):
            o = run_probe(probe, Path(tmp))
            outcomes.append(o)
            mark = "clean" if o.clean else "FAILED"
            print(f"[{i:>2}/{len(probes)}] {mark:6} {o.seconds:5.1f} s  {probe.name}", file=out)
            for problem in o.problems:
                print(f"          - {problem}", file=out)
    clean = sum(o.clean for o in outcomes)
    print(f"probes: {len(outcomes)} tried, {clean} clean, {len(outcomes) - clean} failed", file=out)
    return outcomes


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.probes", description=__doc__.split("\n")[0])
    p.add_argument("--full", action="store_true", help="also the probes that need a bundle")
    p.add_argument("--only", default=None, help="only probes whose name contains this")
    args = p.parse_args(argv)
    outcomes = run(args.full, args.only)
    return 0 if all(o.clean for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
