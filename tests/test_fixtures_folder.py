"""`voxport fixtures swift --out DIR` replaces only what it wrote itself (issue 29, item 1):
the real folder logic (`conversion.fixtures.folder`) with a tiny writer in place of the ~10 s
real one (which runs in test_swift_fixtures.py)."""

from __future__ import annotations

import json
import os

import pytest

from conversion.cli import swift_fixtures
from conversion.cli.main import main


def _tiny(root):
    (root / "kokoro").mkdir(parents=True)
    (root / "kokoro" / "vocab.json").write_text('{"a": 1}')
    (root / "sha256.json").write_text("{}")


@pytest.fixture(autouse=True)
def tiny_writer(monkeypatch):
    monkeypatch.setattr(swift_fixtures, "_write_all", _tiny)


def _run(out, capsys) -> tuple[int, str]:
    code = main(["fixtures", "swift", "--out", str(out)])
    return code, capsys.readouterr().err


def test_a_new_folder_is_written_and_indexed_with_hashes(tmp_path, capsys):
    out = tmp_path / "fx"
    assert _run(out, capsys) == (0, "")
    index = json.loads((out / "index.json").read_text())
    assert index["format"] == "voxport-swift-fixtures/1"
    assert sorted(index["files"]) == ["kokoro/vocab.json", "sha256.json"]
    assert index["files"]["sha256.json"]["bytes"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fx"]  # no staging left beside it


def test_a_second_run_replaces_its_own_files(tmp_path, capsys):
    out = tmp_path / "fx"
    assert _run(out, capsys)[0] == 0
    (out / "kokoro" / "stale.json").write_text("x")  # not its own: refused, kept
    code, err = _run(out, capsys)
    assert code == 2 and "stale.json is not a fixture this command wrote" in err
    (out / "kokoro" / "stale.json").unlink()
    assert _run(out, capsys)[0] == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fx"]


def test_an_index_naming_a_file_outside_deletes_nothing(tmp_path, capsys):
    """The issue's repro: an index naming ../victim.txt and a user's DIR/kokoro/notes.txt."""
    out = tmp_path / "fx"
    (out / "kokoro").mkdir(parents=True)
    (out / "kokoro" / "notes.txt").write_text("mine")
    (tmp_path / "victim.txt").write_text("keep")
    (out / "index.json").write_text('{"files": ["../victim.txt"]}')
    code, err = _run(out, capsys)
    assert code == 2 and err.startswith("voxport: error: ") and err.count("\n") == 1
    assert (tmp_path / "victim.txt").read_text() == "keep"
    assert (out / "kokoro" / "notes.txt").read_text() == "mine"
    # The same with a well-formed index of this format naming ../victim.txt, or an absolute path.
    for name in ("../victim.txt", str(tmp_path / "victim.txt")):
        entry = {"bytes": 4, "sha256": "0" * 64}
        payload = {"format": "voxport-swift-fixtures/1", "files": {name: entry}}
        (out / "index.json").write_text(json.dumps(payload))
        code, err = _run(out, capsys)
        assert code == 2 and "outside it" in err, err
        assert (tmp_path / "victim.txt").read_text() == "keep"


def test_a_users_file_at_a_listed_name_is_not_replaced(tmp_path, capsys):
    """Listed in the index, but not the bytes the writer wrote there: not its own."""
    out = tmp_path / "fx"
    assert _run(out, capsys)[0] == 0
    (out / "sha256.json").write_text("my edit")
    code, err = _run(out, capsys)
    assert code == 2 and "sha256.json is not a fixture this command wrote" in err
    assert (out / "sha256.json").read_text() == "my edit"


@pytest.mark.parametrize("kind", ["file", "fifo", "dangling link", "link to a folder"])
def test_out_that_is_not_a_folder_is_one_line(tmp_path, capsys, kind):
    out = tmp_path / "fx"
    if kind == "file":
        out.write_text("x")
    elif kind == "fifo":
        os.mkfifo(out)
    elif kind == "dangling link":
        out.symlink_to(tmp_path / "missing")
    else:
        (tmp_path / "real").mkdir()
        out.symlink_to(tmp_path / "real")
    code, err = _run(out, capsys)
    assert code == 2 and err.startswith("voxport: error: --out ") and err.count("\n") == 1
    assert os.path.lexists(out) and not (tmp_path / "missing").exists()


@pytest.mark.parametrize(
    "index", [b"not json", b"\xff\xfe", b"[1, 2]", b'"s"', b"[" * 1200 + b"]" * 1200, b"{}"]
)
def test_an_index_that_is_not_ours_is_one_line(tmp_path, capsys, index):
    out = tmp_path / "fx"
    out.mkdir()
    (out / "index.json").write_bytes(index)
    code, err = _run(out, capsys)
    assert code == 2 and "is not a fixtures folder this command wrote" in err
    assert err.count("\n") == 1 and (out / "index.json").read_bytes() == index


def test_a_link_inside_the_folder_is_not_followed(tmp_path, capsys):
    out = tmp_path / "fx"
    assert _run(out, capsys)[0] == 0
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "keep.txt").write_text("keep")
    (out / "kokoro" / "link").symlink_to(tmp_path / "elsewhere")
    code, err = _run(out, capsys)
    assert code == 2 and "link is not a fixture this command wrote" in err
    assert (tmp_path / "elsewhere" / "keep.txt").read_text() == "keep"


def test_a_failed_write_leaves_the_previous_fixtures(tmp_path, capsys, monkeypatch):
    out = tmp_path / "fx"
    assert _run(out, capsys)[0] == 0
    before = (out / "index.json").read_bytes()

    def broken(root):
        _tiny(root)
        raise RuntimeError("writer bug")

    monkeypatch.setattr(swift_fixtures, "_write_all", broken)
    with pytest.raises(RuntimeError):
        main(["fixtures", "swift", "--out", str(out)])
    assert (out / "index.json").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fx"]
