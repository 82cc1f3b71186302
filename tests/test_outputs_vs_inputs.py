"""Issue 29, failures 3 and 6: an output over the run's own inputs, over another output of it,
or inside a bundle, is refused in one line before any compute; and the last tracebacks and
late refusals among user mistakes are each one line, exit 2, before anything loads.

"Before anything loads" is held as in tests/test_cli_user_errors.py: `nothing_loads` makes
every way to weights or a bundle raise `Loaded`.
"""

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from conversion.cli import registry
from conversion.cli import sweep as cli_sweep
from conversion.core.bundle import MANIFEST, BundleWriter, load_manifest
from conversion.core.errors import BundleIntegrityError
from conversion.core.paths import NAME_MAX, partial_path, write_json
from conversion.core.port import ModelPort
from tests import test_cli_user_errors as user_errors
from tests.test_cli_user_errors import Loaded, _assert_one_line, _run, _unreadable

nothing_loads = user_errors.nothing_loads  # the fixture: weights and bundles out of reach


def _bundle(where: Path, key: dict | None = None) -> Path:
    """A `core` bundle with one host file and no graph: written in a second, no converter."""
    where.parent.mkdir(parents=True, exist_ok=True)
    src = where.parent / "table.txt"
    src.write_text("1 2 3\n")
    with BundleWriter(where, model="core", key=key) as writer:
        writer.add_file(src)
    return where


def _tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _wav(path: Path, rate: int = 16_000, seconds: float = 2.0) -> Path:
    t = np.arange(int(rate * seconds)) / rate
    sf.write(path, (0.1 * np.sin(2 * np.pi * 220 * t)).astype(np.float32), rate)
    return path


# -- 3. outputs over their own inputs ----------------------------------------------------------


def _clash_cases(d: Path) -> list[tuple[list[str], str]]:
    """(argv, what the line says), each over something made in `d` (the working folder)."""
    return [
        # the reported repro: the reference recording replaced by what was made from it
        (["speak", "chatterbox", "Hi.", "--weights", "random", "--ref", "r.wav", "-o", "r.wav"],
         "-o r.wav is the --ref this run reads"),
        # by resolved identity, not by string
        (["speak", "chatterbox", "Hi.", "--weights", "random", "--ref", "r.wav", "-o",
          "sub/../r.wav"], "is the --ref"),
        (["speak", "audio8_tts", "Hi.", "--weights", "random", "--ref", "r.wav", "--ref-text",
          "hi", "-o", "here/r.wav"], "is the --ref"),
        (["voice", "audio8_tts", "--weights", "random", "--ref", "v.npz", "--ref-text", "hi",
          "-o", "v.npz"], "is the --ref"),
        (["speak", "kokoro", "Hi.", "--voice", "pack.pt", "-o", "pack.pt"], "is the --voice"),
        (["speak", "kokoro", "Hi.", "--voice", "jf_alpha:1,pack.pt:1", "-o", "./pack.pt"],
         "is the --voice"),
        # two outputs of one run
        (["gate", "core", "--json", "x", "--markdown", "x"], "--json and --markdown name the same"),
        (["gate", "core", "--json", "here/x", "--plot", "x"], "--json and --plot name the same"),
        (["bench", "core", "--json", "x", "--repeats", "1"], None),  # one output: fine (no clash)
        # weights files: the folder is read and hashed (Audio8 hashes every file in it)
        (["speak", "kokoro", "Hi.", "--weights", "w", "-o", "w/out.wav"],
         "inside the weights folder w"),
        (["speak", "kokoro", "Hi.", "--weights", "w", "-o", "w/kokoro-v1_0.pth"],
         "inside the weights folder"),
        # into a bundle: every later use refuses the stray entry
        (["speak", "kokoro", "Hi.", "--bundle", "nb", "-o", "nb/x.wav"], "inside --bundle nb"),
        (["speak", "kokoro", "Hi.", "-o", "B/x.wav"], "inside the bundle"),
        (["gate", "core", "--json", "B/sub/report.json"], "inside the bundle"),
        (["export", "core", "--output-dir", "B/sub"], "--output-dir B/sub is inside the bundle"),
        (["gate", "kokoro", "--bundle", "B/inner"], "--bundle B/inner is inside the bundle"),
        # an export replaces its folder whole: never one holding what the run reads, or cwd
        (["export", "kokoro", "--weights", "w", "--output-dir", ".", "--overwrite"],
         "holds the working folder"),
        (["export", "kokoro", "--weights", "nest/w", "--output-dir", "nest", "--overwrite"],
         "holds the --weights"),
    ]  # fmt: skip


def _prepare(d: Path) -> None:
    _wav(d / "r.wav")
    (d / "v.npz").write_bytes(b"not audio: refused as an output first")
    (d / "pack.pt").write_bytes(b"a voice pack")
    (d / "sub").mkdir()
    (d / "here").symlink_to(d)  # here/x is x
    for w in (d / "w", d / "nest" / "w"):
        w.mkdir(parents=True)
        (w / "kokoro-v1_0.pth").write_bytes(b"weights")
    _bundle(d / "B")


@pytest.mark.parametrize("case", range(len(_clash_cases(Path(".")))))
def test_an_output_over_the_runs_inputs_is_one_line_before_loading(case, nothing_loads, capsys):
    d = nothing_loads
    _prepare(d)
    argv, says = _clash_cases(d)[case]
    before = _tree(d)
    code, err = _run(argv, capsys)
    if says is None:  # the control: no clash, so the run goes on (to a load, refused here)
        assert code != 2 or "same" not in " ".join(err), err
        return
    _assert_one_line(code, err, says)
    assert _tree(d) == before  # nothing written, nothing replaced
    assert not (d / "nb").exists() and not (d / "bundles").exists()
    load_manifest(d / "B")  # the bundle is still closed: no stray entry


def test_export_output_dir_dot_inside_a_bundle_is_one_line(nothing_loads, capsys, monkeypatch):
    """`cd B && voxport export core --output-dir . --overwrite`: the rename would replace the
    working folder under the process (a traceback before; the bundle gone)."""
    b = _bundle(nothing_loads / "B")
    before = _tree(b)
    monkeypatch.chdir(b)
    code, err = _run(["export", "core", "--output-dir", ".", "--overwrite"], capsys)
    _assert_one_line(code, err, "--output-dir . holds the working folder")
    assert _tree(b) == before


# -- 3. a --bundle made from other arguments ----------------------------------------------------


def _other_key_bundle(d: Path, port: ModelPort, config) -> Path:
    """An intact bundle at d/mine whose key is the gate's but for its weights (hashes intact:
    what a hand-edited manifest key looks like)."""
    if port.name == "chatterbox":  # its gate's main bundle: fp32 at the gate's sizes
        from conversion.chatterbox.gate.ladder import gate_config

        assert gate_config(config) == config  # at reduced sizes: no "gate" variant folder
    key = port.bundle_key(d, config, "fp32").to_json()
    return _bundle(d / "mine", key={**key, "weights_sha256": "ff" * 32})


@pytest.mark.parametrize("model", ["kokoro", "chatterbox", "audio8_tts"])
def test_a_bundle_of_other_arguments_is_refused_before_the_model_loads(
    model, tmp_path, monkeypatch, capsys
):
    """The key check comes before the weights load (a gate would load its model and run its
    oracle first); `--overwrite` lets the run go on (here: to the load, refused)."""
    port = registry.port(model)
    config = port.config("reduced")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(type(port), "resolve", lambda self, *a: (tmp_path, config))
    monkeypatch.setattr(type(port), "weights_sha256", lambda self, folder: "00")

    def refuse(*_a, **_k):
        raise Loaded("the weights loaded before the --bundle was checked")

    module = {"kokoro": "kokoro.weights", "chatterbox": "chatterbox.weights",
              "audio8_tts": "audio8_tts.weights"}[model]  # fmt: skip
    weights = __import__(f"conversion.{module}", fromlist=["x"])
    for name in ("load_kmodel", "load_model", "load"):
        if hasattr(weights, name):
            monkeypatch.setattr(weights, name, refuse)
    b = _other_key_bundle(tmp_path, port, config)
    before = _tree(b)
    argv = ["gate", model, "--config", "reduced", "--weights", "random", "--bundle", str(b)]
    code, err = _run(argv, capsys)
    _assert_one_line(code, err, f"--bundle {b} holds a bundle made from other arguments")
    assert "weights: ffffffffffff… there, 00 here" in err[0] and "--overwrite" in err[0]
    assert _tree(b) == before
    with pytest.raises(Loaded):
        main_argv = [*argv, "--overwrite"]
        from conversion.cli.main import main

        main(main_argv)


def test_a_weights_sweep_into_one_bundle_needs_overwrite(tmp_path, monkeypatch, capsys):
    """Each weights seed is its own export: into one --bundle every run but the first would be
    refused, minutes into the sweep. Refused before the first run instead."""

    def no_run(*_a, **_k):
        raise Loaded("a gate run started")

    monkeypatch.setattr(cli_sweep.subprocess, "run", no_run)
    argv = ["gate", "chatterbox", "--weights", "random", "--weights-seeds", "0,1"]
    code, err = _run([*argv, "--bundle", str(tmp_path / "mine")], capsys)
    _assert_one_line(code, err, "--weights-seeds with --bundle", "--overwrite")
    with pytest.raises(Loaded):
        _run([*argv, "--bundle", str(tmp_path / "mine"), "--overwrite"], capsys)


# -- 6. a manifest that is not a JSON object -----------------------------------------------------

BAD_MANIFESTS = {
    "a-list": (b"[1, 2]", "holds a JSON list"),
    "a-string": (b'"x"', "holds a JSON string"),
    "not-utf8": (b'\xff\xfe{"format": 1}', "is not UTF-8 text (byte 0xff at 0)"),
    "nested-1200": (b"[" * 1200 + b"]" * 1200, "nested too deeply"),
    "key-a-list": (None, "malformed manifest (key)"),
}


@pytest.mark.parametrize("name", BAD_MANIFESTS)
@pytest.mark.parametrize("verb", ["serve", "sideload"])
def test_a_manifest_that_is_no_json_object_is_one_line(name, verb, tmp_path, capsys):
    b = _bundle(tmp_path / "b")
    raw, says = BAD_MANIFESTS[name]
    if raw is None:
        doc = json.loads((b / MANIFEST).read_text())
        doc["key"] = []
        raw = json.dumps(doc).encode()
    (b / MANIFEST).write_bytes(raw)
    with pytest.raises(BundleIntegrityError, match=re.escape(says)):
        load_manifest(b)
    argv = {
        "serve": ["serve", str(b)],
        "sideload": ["sideload", "core", "--bundle", str(b), "--device", "D", "--app-id", "a.b",
                     "--dry-run"],
    }[verb]  # fmt: skip
    code, err = _run(argv, capsys)
    _assert_one_line(code, err, says)
    assert (b / MANIFEST).read_bytes() == raw


# -- 6. values that were a traceback or ran late --------------------------------------------------

LONG = "a" * (NAME_MAX + 1)

ONE_LINERS = [
    (["speak", "kokoro", "Hi.", "-o", "x.wav", "--workers", "1000000000000000"], "--workers"),
    (["bench", "core", "--repeats", "-1"], "argument --repeats"),
    # 0 was taken for "not given": 40 repeats ran (core, chatterbox)
    (["bench", "core", "--repeats", "0"], "argument --repeats"),
    (["bench", "chatterbox", "--weights", "random", "--repeats", "0"], "argument --repeats"),
    (["gate", "core", "--json", ""], "--json is empty"),
    # -o '' synthesised everything, then refused
    (["speak", "kokoro", "Hi.", "-o", ""], "-o is empty"),
    (["speak", "kokoro", "Hi.", "-o", f"{LONG}.wav"], f"is {NAME_MAX + 5} bytes"),
    (["gate", "core", "--json", f"out/{LONG}/g.json"], f"is {NAME_MAX + 1} bytes"),
    (["export", "core", "--output-dir", LONG], f"is {NAME_MAX + 1} bytes"),
    (["gate", "kokoro", "--weights", "w" * 5000], "--weights www"),
    # a valid name whose lock and staging folder beside it would not be: a traceback at start
    (["export", "core", "--output-dir", "k" * 250], "a bundle folder's name may be 191 bytes"),
    (["speak", "kokoro", "Hi.", "-o", "x.wav", "--bundle", "k" * 192], "this one is 192"),
    (["gate", "core", "--json", "/".join(["d" * 200] * 21)], "bytes in full"),
    (["phonemize", "kokoro", "1" * 5000], "a number of 5000 digits"),
    (["phonemize", "kokoro", "1" + ",111" * 150], "a number of 451 digits"),
    (["phonemize", "kokoro", "\u0661" * 400], "a number of 400 digits"),  # Arabic-Indic
    (["speak", "kokoro", "1" * 400 + " cats.", "-o", "x.wav"], "a number of 400 digits"),
    (["speak", "kokoro", "Hi.", "-o", "x.wav", "--voice", "a" * 5000], "(5000 characters)"),
    (["gate", "chatterbox", "--weights", "random", "--mutants", "nope"], "unknown fault(s) nope"),
    (["gate", "audio8_tts", "--weights", "random", "--mutants", "nope"], "unknown fault(s) nope"),
]


@pytest.mark.parametrize("argv, says", ONE_LINERS, ids=lambda v: str(v)[:40])
def test_each_is_one_line_before_loading(argv, says, nothing_loads, capsys):
    code, err = _run(argv, capsys)
    _assert_one_line(code, err, says)
    assert len(err[0]) < 1000, err  # a 5,000-character name is shown cut
    assert not (nothing_loads / "out").exists() and not (nothing_loads / "bundles").exists()


def test_phonemize_still_reads_a_long_number_it_can(capsys):
    from conversion.cli.main import main

    assert main(["phonemize", "kokoro", "1" * 300]) == 0
    assert json.loads(capsys.readouterr().out)["chunks"]


def _pt(path: Path, tensor) -> Path:
    import torch

    torch.save(tensor, path)
    return path


@pytest.mark.parametrize(
    "make, says",
    [
        (lambda torch: torch.zeros(510, 1, 256, dtype=torch.int32), "holds torch.int32"),
        (lambda torch: torch.full((510, 1, 256), float("nan")), "NaN or infinite"),
    ],
    ids=["int32", "nan"],
)
def test_a_voice_pack_of_ints_or_nan_is_refused_before_loading(make, says, nothing_loads, capsys):
    """Accepted before (the int32 pack cast to floats; the NaN one failed after the bundle
    loaded, "L = 0")."""
    import torch

    _pt(nothing_loads / "v.pt", make(torch))
    code, err = _run(["speak", "kokoro", "Hi.", "-o", "x.wav", "--voice", "v.pt"], capsys)
    _assert_one_line(code, err, says)


@pytest.mark.parametrize("model", ["chatterbox", "audio8_tts"])
def test_a_one_hertz_reference_is_refused_before_loading(model, nothing_loads, capsys):
    """Ten samples at "1 Hz" are ten seconds by the header: accepted, then resampled to
    240,000 samples of nothing."""
    sf.write(nothing_loads / "r.wav", np.full(10, 0.5, np.float32), 1)
    argv = ["speak", model, "Hi.", "--weights", "random", "--ref", "r.wav", "-o", "x.wav"]
    code, err = _run([*argv, *(["--ref-text", "hi"] if model == "audio8_tts" else [])], capsys)
    _assert_one_line(code, err, "r.wav is sampled at 1 Hz", "8000 Hz")


def test_a_folder_where_a_weights_file_belongs_is_one_line(nothing_loads, capsys):
    """As root nothing is unreadable by permission: a folder in a file's place stands in for
    it (its open fails alike); a PermissionError on open is the next test."""
    w = nothing_loads / "w"
    (w / "kokoro-v1_0.pth").mkdir(parents=True)
    code, err = _run(["gate", "kokoro", "--weights", str(w)], capsys)
    _assert_one_line(code, err, f"weights file {w / 'kokoro-v1_0.pth'} is a folder")


def test_a_weights_file_this_user_cannot_read_is_one_line(nothing_loads, capsys, monkeypatch):
    w = nothing_loads / "w"
    w.mkdir()
    for name in ("ve.safetensors", "t3_cfg.safetensors", "s3gen.safetensors", "tokenizer.json"):
        (w / name).write_bytes(b"x")
    _unreadable(monkeypatch, w / "t3_cfg.safetensors")
    code, err = _run(["gate", "chatterbox", "--weights", str(w)], capsys)
    _assert_one_line(code, err, "t3_cfg.safetensors cannot be read (Permission denied)")


# -- 6. a valid 250-byte output name: its partial file stays within NAME_MAX --------------------


def test_the_partial_file_of_a_long_valid_name_fits_the_file_system(tmp_path):
    """`.NAME.partial-PID` passed 255 bytes for a 250-byte NAME: the write failed after all
    the work. Now the partial name is cut and hashed; one name per target still."""
    a, b = tmp_path / ("é" * 124 + ".json"), tmp_path / ("é" * 124 + "x.json")
    for target in (a, b):
        assert len(os.fsencode(target.name)) <= NAME_MAX
        tmp = partial_path(target)
        assert len(os.fsencode(tmp.name)) <= NAME_MAX and tmp.parent == target.parent
        assert tmp.name.startswith(".") and tmp.name.endswith(f".partial-{os.getpid()}")
        tmp.name.encode("utf-8")  # cut on a character, not inside one
    assert partial_path(a) != partial_path(b) and partial_path(a) == partial_path(a)
    write_json(a, {"ok": True})
    assert json.loads(a.read_text()) == {"ok": True}
    assert sorted(p.name for p in tmp_path.iterdir()) == [a.name]


def test_a_short_name_keeps_its_plain_partial_name(tmp_path):
    assert partial_path(tmp_path / "x.wav").name == f".x.wav.partial-{os.getpid()}"


def test_nothing_loads_is_in_force(nothing_loads):
    """The fixture this file leans on still refuses a load (a guard against a rename)."""
    with pytest.raises(Loaded):
        ModelPort.resolve(registry.port("kokoro"), None, "reduced", 0)


def test_verbs_that_only_read_a_bundle_are_not_refused_for_where_it_lies(tmp_path):
    """`serve B` and `sideload --bundle B` write nothing into B: a bundle kept inside another
    folder that is a bundle is theirs to read (the write rules are for gate, speak, bench and
    export, which may export there)."""
    import argparse

    from conversion.cli import outputs

    outer = _bundle(tmp_path / "outer")
    inner = _bundle(outer / "inner")
    for verb in ("serve", "sideload"):
        outputs.check(argparse.Namespace(verb=verb, bundle=str(inner)))
    with pytest.raises(outputs.UserError, match="inside the bundle"):
        outputs.check(argparse.Namespace(verb="gate", bundle=str(inner)))
