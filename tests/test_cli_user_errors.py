"""Issue 21, deliverable 5: user mistakes that used to be a traceback, or a late or wrong
message, are each one line (`voxport: error: ...`) and exit code 2, before any weights are
resolved or a bundle is asked for.

"Before any loading" is held by `nothing_loads`: every way a verb reaches weights (a port's
`resolve` / `resolve_weights`, a hub download) or a bundle (`ensure_bundle`) raises `Loaded`,
so a check that runs after one of them fails the test instead of passing late.
"""

import builtins
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conversion.cli import registry
from conversion.cli import sweep as cli_sweep
from conversion.cli.main import _parse, main
from conversion.core import hub
from conversion.core.bundle import MANIFEST, BundleWriter, load_manifest
from conversion.core.errors import BundleIntegrityError, UserError
from conversion.core.port import ModelPort

VOXPORT = os.path.join(os.path.dirname(sys.executable), "voxport")
PORTS = ("kokoro", "chatterbox", "audio8_tts", "chatterbox_turbo")


class Loaded(AssertionError):
    """A verb reached weights or a bundle before naming the user's mistake."""


@pytest.fixture
def nothing_loads(monkeypatch, tmp_path):
    """Weights, bundles and gate runs are out of reach, and the working folder is an empty
    temp one (so a default bundle folder, `bundles/...`, would show up there)."""

    def refuse(*_a, **_k):
        raise Loaded("weights or a bundle were reached before the mistake was named")

    monkeypatch.setattr(ModelPort, "resolve", refuse)
    monkeypatch.setattr(ModelPort, "ensure_bundle", refuse)
    monkeypatch.setattr(hub, "snapshot", refuse)
    monkeypatch.setattr(cli_sweep, "run", refuse)  # a seed sweep: one gate process per seed
    for name in PORTS:
        monkeypatch.setattr(registry.port(name), "resolve_weights", refuse)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _run(argv: list[str], capsys) -> tuple[int, list[str]]:
    """Exit code and stderr lines of `voxport ARGV` in this process (argparse's own refusals
    exit with SystemExit, as they do for a user)."""
    try:
        code = main(argv)
    except SystemExit as e:
        code = e.code
    return code, capsys.readouterr().err.strip().splitlines()


def _assert_one_line(code: int, err: list[str], *needles: str) -> None:
    assert code == 2, err
    assert len(err) == 1 and err[0].startswith("voxport: error: "), err
    for needle in needles:
        assert needle in err[0], err


def _nothing_made(root: Path) -> None:
    """No bundle folder and no output folder appeared in the working folder."""
    assert not (root / "bundles").exists()
    assert not (root / "out").exists()


# -- 1. text that is not UTF-8 ---------------------------------------------------------------

# What Python makes of the bytes ff fe in argv (undecodable bytes become lone surrogates:
# PEP 383 surrogateescape), as `voxport speak kokoro $'\xff\xfe'` hands them over.
NOT_UTF8 = "\udcff\udcfe"

TEXT_VERBS = [
    ["speak", "kokoro", NOT_UTF8, "-o", "out/x.wav"],
    ["speak", "chatterbox", NOT_UTF8, "-o", "out/x.wav", "--weights", "random"],
    ["speak", "audio8_tts", NOT_UTF8, "-o", "out/x.wav", "--weights", "random"],
    ["phonemize", "kokoro", NOT_UTF8],
    ["tokenize", "chatterbox", NOT_UTF8, "--weights", "random"],
    ["tokenize", "audio8_tts", NOT_UTF8, "--weights", "random"],
]


@pytest.mark.parametrize("argv", TEXT_VERBS, ids=lambda a: f"{a[0]}-{a[1]}")
def test_text_that_is_not_utf8_is_one_line(argv, nothing_loads, capsys):
    code, err = _run(argv, capsys)
    _assert_one_line(code, err, "TEXT is not valid UTF-8", "byte 0xff")
    _nothing_made(nothing_loads)


def test_ref_text_that_is_not_utf8_is_one_line(nothing_loads, capsys):
    argv = ["speak", "audio8_tts", "Hi.", "-o", "out/x.wav", "--weights", "random"]
    code, err = _run([*argv, "--ref", "r.wav", "--ref-text", "ok \udce9"], capsys)
    _assert_one_line(code, err, "--ref-text is not valid UTF-8", "byte 0xe9")
    _nothing_made(nothing_loads)


def test_text_bytes_in_a_real_argv_are_one_line(tmp_path):
    """The console script, given the raw bytes: Python's own decoding of argv, then ours."""
    done = subprocess.run(
        [VOXPORT, "speak", "kokoro", b"\xff\xfe", "-o", "out/x.wav"],
        cwd=tmp_path,
        capture_output=True,
        timeout=300,
    )
    err = done.stderr.decode("utf-8", "replace").strip().splitlines()
    _assert_one_line(done.returncode, err, "TEXT is not valid UTF-8", "byte 0xff")
    _nothing_made(tmp_path)


# -- 2. seeds outside 0 .. 2**32 - 1 ---------------------------------------------------------

SEED_VERBS = [
    ["export", "kokoro"],
    ["gate", "kokoro", "--config", "reduced"],
    ["speak", "audio8_tts", "Hi.", "-o", "out/x.wav", "--weights", "random"],
    ["bench", "chatterbox", "--weights", "random"],
    ["tokenize", "audio8_tts", "Hi.", "--weights", "random"],
    ["voice", "chatterbox", "--ref", "r.wav", "-o", "out/v.npz", "--weights", "random"],
]


@pytest.mark.parametrize("value", ["-1", "100000000000000000000", "1e20", "4294967296"])
@pytest.mark.parametrize("flag", ["--seed", "--weights-seed"])
@pytest.mark.parametrize("argv", SEED_VERBS, ids=lambda a: f"{a[0]}-{a[1]}")
def test_a_seed_out_of_range_is_one_line(argv, flag, value, nothing_loads, capsys):
    code, err = _run([*argv, f"{flag}={value}"], capsys)
    _assert_one_line(code, err, f"argument {flag}", "a whole number from 0 to 4294967295")
    _nothing_made(nothing_loads)


def test_a_seed_list_out_of_range_is_one_line(nothing_loads, capsys):
    code, err = _run(["gate", "chatterbox", "--weights", "random", "--seeds", "0,-1"], capsys)
    _assert_one_line(code, err, "argument --seeds", "0 to 4294967295")


def test_the_seed_range_ends_are_taken():
    for value in ("0", "4294967295"):
        args = _parse(["gate", "chatterbox", "--seed", value, "--weights-seed", value])
        assert args.seed == args.weights_seed == int(value)


# -- 3. --weights OWNER/NAME when OWNER is a local folder ------------------------------------


def test_a_missing_path_under_a_local_folder_is_not_a_hub_id(nothing_loads, capsys):
    (nothing_loads / "w").mkdir()
    code, err = _run(["gate", "kokoro", "--weights", "w/nonexistent"], capsys)
    _assert_one_line(code, err, "weights folder w/nonexistent does not exist", "not a hub id")
    _nothing_made(nothing_loads)


def test_a_hub_id_is_still_a_hub_id(nothing_loads, capsys, monkeypatch):
    """With no local folder OWNER, `owner/name` is fetched from the hub (here: refused)."""
    asked = []

    def snapshot(repo, files):
        asked.append(repo)
        raise hub.WeightsError(f"--weights {repo}: the hub refused the repo")

    monkeypatch.setattr(hub, "snapshot", snapshot)
    code, err = _run(["gate", "kokoro", "--weights", "hexgrad/Kokoro-82M"], capsys)
    _assert_one_line(code, err, "the hub refused")
    assert asked == ["hexgrad/Kokoro-82M"]
    (nothing_loads / "hexgrad").mkdir()  # now it names a path under that folder
    assert not hub.is_hub_id("hexgrad/Kokoro-82M")
    assert not hub.is_hub_id("./w/x") and not hub.is_hub_id("w/x/")


# -- 4. Chatterbox weights that are not the asked configuration ------------------------------


def _chatterbox_files(folder: Path, contents) -> Path:
    folder.mkdir()
    for name in ("ve.safetensors", "t3_cfg.safetensors", "s3gen.safetensors"):
        contents(folder / name)
    (folder / "tokenizer.json").write_text("{}")
    return folder


def _chatterbox_checks_only(monkeypatch, tmp_path) -> None:
    """The Chatterbox snapshot checks run (they are under test); loading its model or asking
    for a bundle raises `Loaded`."""
    from conversion.chatterbox import weights

    def refuse(*_a, **_k):
        raise Loaded("the model was loaded, or a bundle asked for, before the check")

    monkeypatch.setattr(weights, "load_model", refuse)
    monkeypatch.setattr(ModelPort, "ensure_bundle", refuse)
    monkeypatch.chdir(tmp_path)


def test_garbage_chatterbox_weights_name_the_file_not_a_configuration(
    tmp_path, monkeypatch, capsys
):
    _chatterbox_checks_only(monkeypatch, tmp_path)
    garbage = _chatterbox_files(tmp_path / "g", lambda p: p.write_bytes(os.urandom(300)))
    argv = ["speak", "chatterbox", "Hi.", "-o", "out/x.wav", "--weights", str(garbage)]
    code, err = _run([*argv, "--config", "reduced"], capsys)
    _assert_one_line(code, err, "ve.safetensors cannot be read")
    assert "published configuration" not in err[0]
    _nothing_made(tmp_path)


def test_chatterbox_weights_without_a_size_marker_name_the_config_asked(
    tmp_path, monkeypatch, capsys
):
    """Readable checkpoints with no voxport-config.json are the publisher's layout, read at
    the published sizes: asked for --config reduced, the message says both, and why."""
    import torch
    from safetensors.torch import save_file

    _chatterbox_checks_only(monkeypatch, tmp_path)
    tiny = lambda p: save_file({"x": torch.zeros(1)}, str(p))  # noqa: E731
    folder = _chatterbox_files(tmp_path / "s", tiny)
    argv = ["speak", "chatterbox", "Hi.", "-o", "out/x.wav", "--weights", str(folder)]
    code, err = _run([*argv, "--config", "reduced"], capsys)
    _assert_one_line(
        code, err, "--config reduced", "no voxport-config.json", "read as the published"
    )
    _nothing_made(tmp_path)


# -- 5. --speed ------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "-inf", "fast", "1e-300", "0.09", "11"])
def test_a_bad_speed_is_one_line_before_loading(value, nothing_loads, capsys):
    """1e-300 used to pass the check and fail after the bundle loaded ("L = 0": every
    duration divided by it is infinite); the range is Kokoro's usable one."""
    argv = ["speak", "kokoro", "Hi.", "-o", "out/x.wav", f"--speed={value}"]
    code, err = _run(argv, capsys)
    _assert_one_line(code, err, "argument --speed", "a finite number from 0.1 to 10")
    _nothing_made(nothing_loads)


# -- 6. an empty voice pack ------------------------------------------------------------------


@pytest.mark.parametrize("name", ["empty.pt", "empty.npy"])
def test_an_empty_voice_pack_says_so_before_loading(name, nothing_loads, capsys):
    (nothing_loads / name).write_bytes(b"")
    argv = ["speak", "kokoro", "Hi.", "-o", "out/x.wav", "--voice", name]
    code, err = _run(argv, capsys)
    _assert_one_line(code, err, f"voice pack {name} is empty (0 bytes)")
    _nothing_made(nothing_loads)


def test_a_voice_pack_error_always_has_a_reason(tmp_path, monkeypatch):
    """torch.load raises some errors with no message (EOFError() on a cut file): the line
    still says what went wrong."""
    import torch

    from conversion.kokoro.voice import load_voice

    def no_message(*_a, **_k):
        raise EOFError()

    monkeypatch.setattr(torch, "load", no_message)
    (tmp_path / "cut.pt").write_bytes(b"PK\3\4")
    with pytest.raises(UserError) as caught:
        load_voice(str(tmp_path / "cut.pt"))
    assert "EOFError" in str(caught.value).split("cut.pt", 1)[1], caught.value


# -- 7. a bundle file that cannot be read ----------------------------------------------------


def _host_file_bundle(tmp_path: Path) -> Path:
    """A bundle of `core` with one host file and no graph: written in a second, no converter."""
    src = tmp_path / "table.txt"
    src.write_text("1 2 3\n")
    with BundleWriter(tmp_path / "b", model="core") as writer:
        writer.add_file(src)
    return tmp_path / "b"


def _unreadable(monkeypatch, path: Path) -> None:
    """Opening `path` fails as it would without read permission (root reads anything, so the
    permission itself cannot be taken away here)."""
    real = builtins.open

    def guarded(file, *args, **kwargs):
        if isinstance(file, (str, os.PathLike)) and os.path.abspath(file) == str(path):
            raise PermissionError(13, "Permission denied", str(file))
        return real(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", guarded)
    monkeypatch.setattr(io, "open", guarded)  # pathlib's read_text opens through io.open


@pytest.mark.parametrize("name", ["table.txt", MANIFEST])
def test_an_unreadable_bundle_file_is_one_line(name, tmp_path, monkeypatch, capsys):
    bundle = _host_file_bundle(tmp_path)
    _unreadable(monkeypatch, bundle / name)
    argv = ["sideload", "core", "--bundle", str(bundle), "--device", "D", "--app-id", "a.b"]
    code, err = _run([*argv, "--dry-run"], capsys)
    _assert_one_line(code, err, f"cannot read {bundle / name}", "Permission denied")
    # not a BundleIntegrityError: `is_current` takes that for a stale bundle and re-exports
    # over it, where a permission problem is the user's to fix
    with pytest.raises(UserError) as caught:
        load_manifest(bundle)
    assert not isinstance(caught.value, BundleIntegrityError)
    monkeypatch.undo()
    assert json.loads((bundle / MANIFEST).read_text())["model"] == "core"  # left as it was
