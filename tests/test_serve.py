"""`voxport serve` and the worker protocol: frames, a real server child, IsolatedSession on it."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from conversion.cli.main import main as cli_main
from conversion.core.bundle import load_manifest
from conversion.core.errors import InputSpecError, UserError
from conversion.core.runtime import worker_protocol as wp
from conversion.core.runtime.isolated_session import IsolatedSession, RuntimeTimeout
from conversion.core.runtime.session import Session
from conversion.selftest.graphs import greedy_runtime

PROMPT = [3, 1, 4, 1, 5, 9, 2, 6]


@pytest.fixture(scope="module")
def bundle(core_bundle):
    return core_bundle  # conftest.py: shared with tests/test_serve_assets.py


@pytest.fixture(scope="module")
def reference(bundle):
    """What an in-process Session answers (mlp once, a greedy decode, the state after it)."""
    x = np.random.default_rng(0).standard_normal((8, 256)).astype(np.float32)
    with Session(bundle) as s:
        y = s.run("mlp", "main", {"x": x})["y"]
        tokens, logits = greedy_runtime(s, PROMPT, steps=5)
        state = s.read_state("decoder")
    return {"x": x, "y": y, "tokens": tokens, "logits": logits, "state": state}


class Child:
    """A `python -m conversion.core.runtime.serve` child spoken to frame by frame."""

    def __init__(self, argv: list[str], stderr) -> None:
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, bufsize=0
        )
        self.read = wp.stream_reader(self.proc.stdout)
        self.ready = self.recv()[0]

    def recv(self):
        frame = wp.read_frame(self.read)
        assert frame is not None, "the server closed its stdout"
        return frame

    def ask(self, header, arrays=None):
        wp.write_frame(self.proc.stdin, header, arrays)
        return self.recv()

    def close(self) -> int:
        if self.proc.poll() is None:
            assert self.ask({"op": "close"})[0] == {"ok": True, "op": "close"}
        rest = self.proc.stdout.read()
        self.proc.stdin.close()
        self.proc.stdout.close()
        assert rest == b"", "bytes after the close reply"
        return self.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def server(bundle, tmp_path_factory):
    log = open(tmp_path_factory.mktemp("log") / "stderr.txt", "w+b")
    child = Child([sys.executable, "-m", "conversion.core.runtime.serve", str(bundle)], log)
    yield child
    child.close()
    log.close()


# -- frames --------------------------------------------------------------------------------------


def _round_trip(header, arrays=None):
    buf = io.BytesIO()
    wp.write_frame(buf, header, arrays)
    raw = buf.getvalue()
    return raw, wp.read_frame(wp.stream_reader(io.BytesIO(raw)))


def test_frame_layout_and_every_dtype():
    arrays = {
        "f32": np.arange(6, dtype=np.float32).reshape(2, 3),
        "f16": np.array([1.5, -2.0], np.float16),
        "f64": np.array(np.pi),  # 0-d
        "i32": np.array([[-(2**31), 2**31 - 1]], np.int32),
        "i64": np.array([2**40], np.int64),
        "b": np.array([True, False, True]),
        "i8": np.array([-128, 127], np.int8),
        "u8": np.array([[0, 255]], np.uint8),
        "i16": np.array([-(2**15), 2**15 - 1], np.int16),
        "empty": np.zeros((0, 4), np.float32),
    }
    raw, (header, got) = _round_trip({"op": "run", "id": 7}, arrays)
    n = int.from_bytes(raw[:4], "little")
    assert header["arrays"][0] == {"name": "f32", "dtype": "float32", "shape": [2, 3], "nbytes": 24}
    assert len(raw) == 4 + n + sum(a.nbytes for a in arrays.values())
    assert raw[4 + n : 4 + n + 24] == arrays["f32"].tobytes()  # raw little-endian, in order
    for k, v in arrays.items():
        assert got[k].dtype == v.dtype and got[k].shape == v.shape and np.array_equal(got[k], v)


def test_wire_array_conversions():
    assert wp.wire_array("a", np.array([1, 2], np.uint16)).dtype == np.int64
    assert wp.wire_array("a", np.array([1, 2], np.uint8)).dtype == np.uint8  # a protocol dtype
    big_endian = np.array([1.0, 2.0], dtype=">f4")
    assert wp.wire_array("a", big_endian).dtype.str == "<f4"
    assert wp.wire_array("a", np.arange(12.0).reshape(3, 4).T).flags.c_contiguous
    with pytest.raises(InputSpecError, match="input 'c': dtype complex64"):
        wp.wire_array("c", np.zeros(2, np.complex64))


def test_broken_streams_are_protocol_errors():
    raw, _ = _round_trip({"op": "run"}, {"x": np.zeros(4, np.float32)})
    for cut in (2, 10, len(raw) - 1):
        with pytest.raises(wp.ProtocolError, match="ended inside"):
            wp.read_frame(wp.stream_reader(io.BytesIO(raw[:cut])))
    assert wp.read_frame(wp.stream_reader(io.BytesIO(b""))) is None
    bad = b'{"arrays":[{"name":"x","dtype":"float32","shape":[4],"nbytes":15}]}'
    with pytest.raises(wp.ProtocolError, match="nbytes 15 != 16"):
        wp.read_frame(wp.stream_reader(io.BytesIO(len(bad).to_bytes(4, "little") + bad)))
    with pytest.raises(wp.ProtocolError, match="not UTF-8 JSON"):
        wp.read_frame(wp.stream_reader(io.BytesIO(b"\x03\x00\x00\x00{x}")))


# -- a real server -------------------------------------------------------------------------------


def test_ready_and_describe(server, bundle):
    assert server.ready["ok"] and server.ready["op"] == "ready"
    assert server.ready["protocol"] == wp.PROTOCOL == "voxport-worker/1"
    assert server.ready["model"] == "core" and server.ready["graphs"] == ["mlp", "decoder"]
    header, arrays = server.ask({"op": "describe"})
    assert header["ok"] and arrays == {}
    assert header["manifest"] == load_manifest(bundle).to_json()
    assert header["loaded"] == ["mlp", "decoder"]


def test_run_equals_in_process_session_bit_for_bit(server, reference):
    header, out = server.ask(
        {"op": "run", "id": 1, "graph": "mlp", "function": "main"}, {"x": reference["x"]}
    )
    assert header["ok"] and header["id"] == 1 and header["ms"] > 0
    assert header["arrays"] == [
        {"name": "y", "dtype": "float32", "shape": [8, 256], "nbytes": 8192}
    ]
    assert np.array_equal(out["y"], reference["y"])

    # The stateful decoder: prefill, then greedy decode steps, state kept in the server.
    assert server.ask({"op": "reset_state", "graph": "decoder"})[0]["ok"]
    zero = np.zeros(1, np.int32)
    _, out = server.ask(
        {"op": "run", "id": 2, "graph": "decoder", "function": "prefill", "state": "default"},
        {"tokens": np.array([PROMPT], np.int32), "start": zero},
    )
    logits = out["logits"][0, -1]
    assert np.array_equal(logits, reference["logits"][0])
    for i, want in enumerate(reference["tokens"]):
        assert int(logits.argmax()) == want
        feed = {"tokens": np.array([[want]], np.int32), "start": np.array([len(PROMPT) + i])}
        header, out = server.ask(
            {"op": "run", "id": 3 + i, "graph": "decoder", "function": "decode"}, feed
        )
        assert header["id"] == 3 + i
        logits = out["logits"][0, -1]
        assert np.array_equal(logits, reference["logits"][i + 1])
    _, state = server.ask({"op": "read_state", "graph": "decoder"})
    assert state.keys() == reference["state"].keys()
    for k, v in reference["state"].items():
        assert np.array_equal(state[k], v)


def test_bad_requests_are_error_frames_and_the_server_keeps_serving(server, reference):
    header, arrays = server.ask(
        {"op": "run", "id": 41, "graph": "mlp", "function": "main"},
        {"x": np.zeros((3, 256), np.float32)},
    )
    assert header["ok"] is False and header["id"] == 41 and arrays == {}
    assert header["error"]["type"] == "InputSpecError" and header["error"]["user"] is True
    assert "shape [3, 256]" in header["error"]["message"]

    header, _ = server.ask({"op": "run", "id": 42, "graph": "mlp", "function": "main"}, {})
    assert (
        header["error"]["type"] == "InputSpecError"
        and "missing ['x']" in header["error"]["message"]
    )
    header, _ = server.ask({"op": "run", "graph": "nope", "function": "main"})
    assert (
        header["error"]["type"] == "UserError" and "no graph 'nope'" in header["error"]["message"]
    )
    header, _ = server.ask({"op": "run", "graph": "mlp"})
    assert header["error"]["message"] == "request 'run' needs 'function' (a non-empty string)"
    header, _ = server.ask({"op": "frobnicate"})
    assert (
        header["error"]["type"] == "UserError"
        and "unknown op 'frobnicate'" in header["error"]["message"]
    )

    header, out = server.ask(
        {"op": "run", "id": 43, "graph": "mlp", "function": "main"}, {"x": reference["x"]}
    )
    assert header["ok"] and np.array_equal(out["y"], reference["y"])
    assert server.proc.poll() is None


def test_stdout_carries_only_frames(bundle, tmp_path):
    """Prints and raw fd-1 writes inside the server go to stderr, never between frames."""
    noisy = (
        "import os, sys\n"
        "from conversion.core.runtime import session as runtime\n"
        "from conversion.core.runtime import serve\n"
        "orig = runtime.Session.run\n"
        "def run(self, *a, **k):\n"
        "    print('stray print'); os.write(1, b'stray fd write\\n')\n"
        "    return orig(self, *a, **k)\n"
        "runtime.Session.run = run\n"
        f"sys.exit(serve.main([{str(bundle)!r}, '--graphs', 'mlp']))\n"
    )
    x = np.ones((8, 256), np.float32)
    requests = io.BytesIO()
    for i in range(3):
        wp.write_frame(
            requests, {"op": "run", "id": i, "graph": "mlp", "function": "main"}, {"x": x}
        )
    wp.write_frame(requests, {"op": "close"})
    done = subprocess.run(
        [sys.executable, "-c", noisy], input=requests.getvalue(), capture_output=True, timeout=300
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    stream = wp.stream_reader(io.BytesIO(done.stdout))
    frames = []
    while (frame := wp.read_frame(stream)) is not None:
        frames.append(frame[0])
    assert [f["op"] for f in frames] == ["ready", "run", "run", "run", "close"]
    assert all(f["ok"] for f in frames)
    assert b"stray print" in done.stderr and b"stray fd write" in done.stderr


def test_garbage_on_stdin_gets_one_error_frame_then_exit(bundle):
    done = subprocess.run(
        [sys.executable, "-m", "conversion.core.runtime.serve", str(bundle), "--graphs="],
        input=b"\x05\x00\x00\x00hello",
        capture_output=True,
        timeout=300,
    )
    assert done.returncode == 3
    stream = wp.stream_reader(io.BytesIO(done.stdout))
    assert wp.read_frame(stream)[0]["op"] == "ready"
    err = wp.read_frame(stream)[0]
    assert err["ok"] is False and err["error"]["type"] == "ProtocolError"
    assert wp.read_frame(stream) is None


# -- the CLI verb --------------------------------------------------------------------------------


def test_cli_serve_refuses_missing_or_tampered_bundles_before_loading(bundle, tmp_path, capsys):
    assert cli_main(["serve", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr()
    assert err.out == "" and err.err.startswith("voxport: error: no bundle at")
    assert len(err.err.strip().splitlines()) == 1

    assert cli_main(["serve", str(bundle), "--graphs", "mlp,nope"]) == 2
    assert "no graph(s) ['nope']" in capsys.readouterr().err

    import shutil

    copy = tmp_path / "tampered"
    shutil.copytree(bundle, copy)
    weights = next((copy / "mlp.aimodel").glob("*.mlirb"))
    weights.write_bytes(weights.read_bytes()[:-1] + b"\x00")
    assert cli_main(["serve", str(copy)]) == 2
    err = capsys.readouterr()
    assert err.out == "" and "does not match its manifest" in err.err
    assert len(err.err.strip().splitlines()) == 1


def test_voxport_serve_executable_speaks_the_protocol(bundle, tmp_path):
    voxport = os.path.join(os.path.dirname(sys.executable), "voxport")
    if not os.path.exists(voxport):
        pytest.fail(f"no voxport executable beside {sys.executable}: pip install -e . first")
    with open(tmp_path / "err.txt", "w+b") as log:
        child = Child([voxport, "serve", str(bundle), "--graphs", "mlp"], log)
        assert child.ready["graphs"] == ["mlp"]
        assert child.ask({"op": "load_graph", "graph": "decoder"})[0]["ok"]
        assert child.ask({"op": "describe"})[0]["loaded"] == ["mlp", "decoder"]
        assert child.close() == 0


# -- IsolatedSession is a client of the same server ----------------------------------------------


def test_isolated_session_equals_session_bit_for_bit(bundle, reference):
    with IsolatedSession(bundle) as s:
        assert np.array_equal(s.run("mlp", "main", {"x": reference["x"]})["y"], reference["y"])
        tokens, logits = greedy_runtime(s, PROMPT, steps=5)
        assert tokens == reference["tokens"]
        assert all(np.array_equal(a, b) for a, b in zip(logits, reference["logits"], strict=True))
        state = s.read_state("decoder")
        assert all(np.array_equal(state[k], v) for k, v in reference["state"].items())
        s.reset_state("decoder")
        assert s.read_state("decoder") == {}  # a fresh state is made on the next call
        with pytest.raises(UserError, match="no graph 'nope'"):
            s.run("nope", "main", {})
        with pytest.raises(InputSpecError, match="complex"):
            s.run("mlp", "main", {"x": np.zeros((8, 256), np.complex64)})
        assert s.alive
    assert not s.alive


def test_isolated_session_rebuilds_the_childs_errors(bundle):
    with pytest.raises(UserError, match="no graph 'nope'"):
        IsolatedSession(bundle, graphs=["mlp", "nope"])


class _HungChild(IsolatedSession):
    """A child that says ready, then never answers (a runtime stuck in a call)."""

    def _command(self) -> list[str]:
        script = (
            "import sys, time\n"
            "from conversion.core.runtime import worker_protocol as wp\n"
            "wp.write_frame(sys.stdout.buffer, {'ok': True, 'op': 'ready', "
            "'protocol': wp.PROTOCOL, 'model': 'core'})\n"
            "time.sleep(120)\n"
        )
        return [sys.executable, "-c", script]


def test_isolated_session_times_out_on_a_hung_child(bundle):
    s = _HungChild(bundle, graphs=[], timeout_s=1.0)
    start = time.monotonic()
    with pytest.raises(RuntimeTimeout, match=r"within 1 s in graph 'mlp' function 'main'"):
        s.run("mlp", "main", {"x": np.zeros((8, 256), np.float32)})
    assert time.monotonic() - start < 30
    assert not s.alive
    s.close()
