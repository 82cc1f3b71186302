"""A program file that is garbage or truncated, in a bundle whose manifest was re-hashed over
it, is refused in one line naming the file before the runtime reads it (issue 29: the
runtime's bytecode reader aborted `voxport serve` with SIGABRT, leaving its lock and folders,
and `speak --bundle B` ended in a `RuntimeCrash` traceback); a caller whose worker dies
anyway says so in one line naming the graph, exit 2."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from conversion.core.bundle import content_hash
from conversion.core.errors import BundleIntegrityError
from conversion.core.runtime import program_check as pc
from conversion.core.runtime import worker_protocol as wp
from conversion.core.runtime.isolated_session import IsolatedSession
from conversion.core.runtime.session import Session

REPO = Path(__file__).resolve().parents[1]


def _walk(path: Path) -> list[tuple[int, int]]:
    """(start, end) of every section of a good program file, its id byte included."""
    fd = os.open(path, os.O_RDONLY)
    try:
        r = pc._Reader(fd, os.fstat(fd).st_size)
        pc._header(r)
        bounds = []
        while r.pos < r.size:
            start = r.pos
            head = r.take(1)[0]
            length = r.varint()
            if head & 0x80:
                alignment = r.varint()
                r.pos += -r.pos % alignment
            r.pos += length
            bounds.append((start, r.pos))
        return bounds
    finally:
        os.close(fd)


def _tamper(src: Path, dest: Path, program: bytes, hash_too: bool = False) -> Path:
    """A copy of bundle `src` whose mlp program is `program`, the manifest re-hashed to match
    (and its main.hash too with `hash_too`): a verified load passes it."""
    shutil.copytree(src, dest)
    asset = dest / "mlp.aimodel"
    (asset / "main.mlirb").write_bytes(program)
    if hash_too:
        import hashlib

        (asset / "main.hash").write_bytes(hashlib.sha256(program).digest())
    doc = json.loads((dest / "manifest.json").read_text())
    doc["graphs"]["mlp"]["sha256"] = content_hash(asset)
    (dest / "manifest.json").write_text(json.dumps(doc))
    return dest


@pytest.fixture(scope="module")
def program(core_bundle) -> bytes:
    return (core_bundle / "mlp.aimodel" / "main.mlirb").read_bytes()


def test_a_good_program_passes_and_every_cut_of_it_fails(core_bundle, program, tmp_path):
    for graph in ("mlp", "decoder"):
        pc.check_asset(core_bundle / f"{graph}.aimodel", full=True)
    bounds = _walk(core_bundle / "mlp.aimodel" / "main.mlirb")
    assert len(bounds) >= 6 and bounds[-1][1] == len(program)
    # Every section boundary, inside each section, inside the header, and nothing at all.
    cuts = {0, 2, 5, 12} | {b for s in bounds for b in s} | {(a + b) // 2 for a, b in bounds}
    f = tmp_path / "main.mlirb"
    for cut in sorted(cuts - {len(program)}):
        f.write_bytes(program[:cut])
        why = pc.problem(f)
        assert why is not None, f"a program cut at byte {cut} of {len(program)} passed"
    for garbage in (os.urandom(len(program)), bytes(len(program)), b"{}", program[::-1]):
        f.write_bytes(garbage)
        assert pc.problem(f) is not None
    f.write_bytes(program + b"\0" * 7)  # bytes past the last section: not a program either
    assert pc.problem(f) is not None


def test_a_program_that_disagrees_with_its_hash_file_fails_a_full_check(core_bundle, tmp_path):
    asset = tmp_path / "mlp.aimodel"
    shutil.copytree(core_bundle / "mlp.aimodel", asset)
    data = bytearray((asset / "main.mlirb").read_bytes())
    data[len(data) // 2] ^= 0xFF  # inside the weights: the walk cannot see it, the hash can
    (asset / "main.mlirb").write_bytes(bytes(data))
    pc.check_asset(asset)  # the cheap check (a worker's, after its parent's full one)
    with pytest.raises(BundleIntegrityError, match="main.hash"):
        pc.check_asset(asset, full=True)


@pytest.mark.parametrize("how", ["truncated", "garbage"])
def test_serve_refuses_a_rehashed_bad_program_in_one_line_and_leaves_nothing(
    core_bundle, program, tmp_path, how
):
    """The issue's case: `voxport serve B` died with SIGABRT (exit 134), no ready frame, its
    `.B.lock`, lowered and temp folders left."""
    bad = program[: len(program) // 2] if how == "truncated" else os.urandom(len(program))
    bundle = _tamper(core_bundle, tmp_path / "b", bad, hash_too=True)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "conversion.cli.main", "serve", str(bundle)],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=300,
        env={**os.environ, "TMPDIR": str(tmp)},
    )
    err = done.stderr.decode().strip().splitlines()
    assert done.returncode == 2, done.stderr.decode()[-2000:]
    assert len(err) == 1 and err[0].startswith("voxport: error: "), err
    assert f"{bundle / 'mlp.aimodel' / 'main.mlirb'}" in err[0] and "re-export" in err[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b", "tmp"]  # no .b.lock
    assert list(tmp.iterdir()) == []


def test_sessions_refuse_it_before_any_child_and_a_worker_answers_load_graph_with_an_error(
    core_bundle, program, tmp_path
):
    bundle = _tamper(core_bundle, tmp_path / "b", program[:-100], hash_too=True)
    for open_session in (Session, IsolatedSession):
        with pytest.raises(BundleIntegrityError, match=r"mlp.aimodel/main.mlirb.*truncated"):
            open_session(bundle)
    # A worker told to load nothing first (what IsolatedSession spawns): the load request is
    # answered with an error, and the worker goes on serving the good graph.
    proc = subprocess.Popen(
        [sys.executable, "-m", "conversion.core.runtime.serve", str(bundle), "--graphs="],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        bufsize=0,
    )
    chan = wp.PipeChannel(proc.stdout.fileno(), proc.stdin.fileno())
    deadline = time.monotonic() + 120
    try:
        assert chan.recv(deadline)[0]["ok"]
        chan.send({"op": "load_graph", "id": 1, "graph": "mlp"}, deadline=deadline)
        reply = chan.recv(deadline)[0]
        assert not reply["ok"] and "main.mlirb" in reply["error"]["message"], reply
        chan.send({"op": "load_graph", "id": 2, "graph": "decoder"}, deadline=deadline)
        assert chan.recv(deadline)[0]["ok"]
        chan.send({"op": "close"}, deadline=deadline)
        chan.recv(deadline)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_dead_worker_is_one_line_naming_the_graph_exit_2(core_bundle, monkeypatch, capsys):
    """A worker the runtime aborts (a program that passes every check, a runtime bug): the
    caller's `RuntimeCrash` was a traceback out of `voxport speak`; now one line, exit 2."""
    from conversion.cli import main as cli

    def speak(args) -> int:
        x = np.zeros((8, 256), np.float32)
        with IsolatedSession(core_bundle) as s:
            os.kill(s._proc.pid, signal.SIGABRT)  # as the runtime's abort would
            s.run("mlp", "main", {"x": x})
        return 0

    monkeypatch.setattr(cli.registry, "verb", lambda model, verb: speak)
    code = cli.main(["bench", "core"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2, err
    assert len(err) == 1 and err[0].startswith("voxport: error: "), err
    assert "graph 'mlp'" in err[0] and "SIGABRT" in err[0] and "worker died" in err[0]
