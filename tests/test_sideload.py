"""`voxport sideload`: file by file into Documents/models/<bundle>/, each pulled back and its
sha256 compared — against a stand-in `xcrun` (tests/fake_xcrun.py) that drops a transfer and
still exits 0, as devicectl does."""

from __future__ import annotations

import pytest

from conversion.cli.main import main
from conversion.core.bundle import file_sha256

from .fake_xcrun import install, no_xcrun, tiny_bundle

APP = "com.example.voxport"
UDID = "00008120-000A1B2C3D4E5F60"


@pytest.fixture
def bundle(tmp_path):
    return tiny_bundle(tmp_path / "kokoro-fp32-reduced")


def _files(bundle) -> list[str]:
    return sorted(p.relative_to(bundle).as_posix() for p in bundle.rglob("*") if p.is_file())


def _sideload(bundle, *extra):
    argv = ["sideload", "kokoro", "--bundle", str(bundle), "--device", UDID, "--app-id", APP]
    return main([*argv, *extra])


def _opt(argv, name):
    return argv[argv.index(name) + 1]


def test_every_file_is_pushed_then_pulled_back_and_checked(bundle, tmp_path, monkeypatch, capsys):
    device = install(tmp_path, monkeypatch)
    assert _sideload(bundle) == 0
    out = capsys.readouterr().out
    files = _files(bundle)
    assert len(files) == 4 and "g.aimodel/weights/0.bin" in files
    assert f"sideloaded {len(files)} files" in out
    calls = device.calls()
    # One copy to per file, each followed at once by the copy from of the same path.
    assert len(calls) == 2 * len(files)
    pushed = []
    for to, back in zip(calls[::2], calls[1::2], strict=True):
        assert to[:5] == ["devicectl", "device", "copy", "to", "--device"]
        assert back[:4] == ["devicectl", "device", "copy", "from"]
        assert _opt(to, "--domain-type") == "appDataContainer"
        assert _opt(to, "--domain-identifier") == APP and _opt(to, "--device") == UDID
        assert _opt(back, "--source") == _opt(to, "--destination")
        pushed.append(_opt(to, "--destination"))
    prefix = "Documents/models/kokoro-fp32-reduced/"
    assert sorted(pushed) == [prefix + f for f in files]  # the asset keeps its .aimodel name
    assert pushed[-1] == prefix + "manifest.json"  # the manifest last
    on_device = device.container(APP) / "Documents" / "models" / bundle.name
    for rel in files:
        assert file_sha256(on_device / rel) == file_sha256(bundle / rel)


@pytest.mark.parametrize("mode", ["truncate", "vanish"])
def test_a_dropped_transfer_that_exits_0_is_named_and_fails(
    bundle, tmp_path, monkeypatch, capsys, mode
):
    device = install(tmp_path, monkeypatch)
    monkeypatch.setenv("FAKE_DROP", "g.aimodel/weights/0.bin")
    monkeypatch.setenv("FAKE_DROP_MODE", mode)
    assert _sideload(bundle) == 1
    captured = capsys.readouterr()
    assert "sideloaded" not in captured.out and "sideloaded" not in captured.err
    err = captured.err
    assert "sideload failed: g.aimodel/weights/0.bin did not arrive intact" in err
    assert "asset g.aimodel (graph 'g')" in err
    assert "compile cache" in err and "Re-run `voxport sideload`" in err
    # Every other file was still pushed and checked, and the manifest withheld.
    destinations = [_opt(c, "--destination") for c in device.calls() if c[3] == "to"]
    assert not any(d.endswith("manifest.json") for d in destinations)
    assert len(destinations) == len(_files(bundle)) - 1
    assert "manifest.json was not pushed" in err


def test_dry_run_prints_one_copy_to_per_file_and_its_check(bundle, tmp_path, monkeypatch, capsys):
    no_xcrun(tmp_path, monkeypatch)
    assert _sideload(bundle, "--dry-run") == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if not ln.startswith("# mkdir")]
    files = _files(bundle)
    copy_to = [ln for ln in lines if ln.startswith("xcrun devicectl device copy to ")]
    assert len(copy_to) == len(files)
    assert len(lines) == 3 * len(files)
    for i, rel in enumerate(sorted(files, key=lambda f: f == "manifest.json")):
        to, back, check = lines[3 * i : 3 * i + 3]
        assert to.endswith(f"--destination Documents/models/{bundle.name}/{rel}")
        assert back.startswith("xcrun devicectl device copy from ")
        assert f"--source Documents/models/{bundle.name}/{rel}" in back
        assert check.endswith(file_sha256(bundle / rel))


def test_tampered_bundle_is_refused_before_any_copy(bundle, tmp_path, monkeypatch, capsys):
    device = install(tmp_path, monkeypatch)
    target = bundle / "g.aimodel" / "weights" / "0.bin"
    data = bytearray(target.read_bytes())
    data[100] ^= 0xFF
    target.write_bytes(bytes(data))
    assert _sideload(bundle) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("voxport: error:")
    assert "asset g.aimodel of graph 'g' does not match its manifest" in err[0]
    assert device.calls() == []  # the stand-in was never called


def test_missing_xcrun_is_one_line_exit_2(bundle, tmp_path, monkeypatch, capsys):
    no_xcrun(tmp_path, monkeypatch)
    assert _sideload(bundle) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "xcrun is not on PATH" in err[0] and "--dry-run" in err[0]


@pytest.mark.parametrize(
    ("model", "needle"),
    [("nosuchmodel", "unknown model 'nosuchmodel'"), ("chatterbox", "not 'chatterbox'")],
)
def test_model_is_checked(bundle, tmp_path, monkeypatch, capsys, model, needle):
    device = install(tmp_path, monkeypatch)
    argv = ["sideload", model, "--bundle", str(bundle), "--device", UDID, "--app-id", APP]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0]
    assert device.calls() == []
