"""`voxport serve --assets`: single `.aimodel` assets, described by the runtime, run with states
the client owns. Everything goes through a real child, frame by frame, and is compared with an
in-process `Session` over the same bundle (conftest.py's `core_bundle`)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

from conversion.cli.main import main as cli_main
from conversion.core.bundle import load_manifest
from conversion.core.runtime import worker_protocol as wp
from conversion.core.runtime.session import LOWERED_PREFIX, Session
from tests.roundtrip import export_single

PROMPT = [3, 1, 4, 1, 5, 9, 2, 6]
STEPS = [7, 2, 5]  # the decode steps' tokens (any: the test compares, it does not sample)
TIMEOUT_S = 120


def _voxport() -> str:
    path = os.path.join(os.path.dirname(sys.executable), "voxport")
    if not os.path.exists(path):
        pytest.fail(f"no voxport executable beside {sys.executable}: pip install -e . first")
    return path


class AssetChild:
    """A `voxport serve --assets` child with its own temp folder, spoken to through
    `PipeChannel` (every wait bounded, so a hung worker fails the test instead of blocking)."""

    def __init__(self, argv: list[str], tmp: os.PathLike, log) -> None:
        self.tmp = tmp
        env = {**os.environ, "TMPDIR": str(tmp)}
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env, bufsize=0
        )
        self.chan = wp.PipeChannel(self.proc.stdout.fileno(), self.proc.stdin.fileno())
        self.ready = self.recv()[0]

    def recv(self):
        frame = self.chan.recv(time.monotonic() + TIMEOUT_S)
        assert frame is not None, "the server closed its stdout"
        return frame

    def ask(self, header, arrays=None):
        self.chan.send(header, arrays, time.monotonic() + TIMEOUT_S)
        return self.recv()

    def ok(self, header, arrays=None):
        reply, out = self.ask(header, arrays)
        assert reply["ok"], reply
        return reply, out

    def error(self, header, arrays=None) -> dict:
        reply, out = self.ask(header, arrays)
        assert reply["ok"] is False and out == {}, reply
        assert reply["op"] == header["op"] and reply.get("id") == header.get("id")
        return reply["error"]

    def lowered(self) -> list[str]:
        """This worker's lowered folders in its temp folder."""
        return [p for p in os.listdir(self.tmp) if p.startswith(f"{LOWERED_PREFIX}{self.pid}-")]

    @property
    def pid(self) -> int:
        return self.proc.pid

    def end(self, close: bool = True) -> int:
        """`close` (or, with close=False, the end of its stdin); the exit status."""
        if close:
            assert self.ask({"op": "close"})[0] == {"ok": True, "op": "close"}
        self.proc.stdin.close()
        rest = self.proc.stdout.read()
        self.proc.stdout.close()
        assert rest == b"", "bytes after the last reply"
        return self.proc.wait(timeout=TIMEOUT_S)


@pytest.fixture(scope="module")
def worker_tmp(tmp_path_factory):
    return tmp_path_factory.mktemp("assets-tmp")


@pytest.fixture(scope="module")
def server(worker_tmp, tmp_path_factory):
    with open(tmp_path_factory.mktemp("log") / "stderr.txt", "w+b") as log:
        child = AssetChild([_voxport(), "serve", "--assets"], worker_tmp, log)
        yield child
        if child.proc.poll() is None:
            assert child.end() == 0


@pytest.fixture(scope="module")
def assets(server, core_bundle):
    """The bundle's two assets loaded in the server: name -> the load_asset reply."""
    return {
        g: server.ok({"op": "load_asset", "path": str(core_bundle / f"{g}.aimodel")})[0]
        for g in ("mlp", "decoder")
    }


def _zero_states(function: dict) -> dict[str, np.ndarray]:
    return {d["name"]: np.zeros(d["shape"], np.dtype(d["dtype"])) for d in function["states"]}


def _feeds() -> list[tuple[str, dict[str, np.ndarray]]]:
    """prefill, then the decode steps: (function, inputs)."""
    feeds = [("prefill", {"tokens": np.array([PROMPT], np.int32), "start": np.zeros(1, np.int32)})]
    for i, t in enumerate(STEPS):
        start = np.array([len(PROMPT) + i], np.int32)
        feeds.append(("decode", {"tokens": np.array([[t]], np.int32), "start": start}))
    return feeds


@pytest.fixture(scope="module")
def reference(core_bundle):
    """What an in-process Session answers: mlp once; prefill + decode steps, the state after."""
    x = np.random.default_rng(0).standard_normal((8, 256)).astype(np.float32)
    with Session(core_bundle) as s:
        y = s.run("mlp", "main", {"x": x})["y"]
        logits = [s.run("decoder", fn, feed)["logits"] for fn, feed in _feeds()]
        state = s.read_state("decoder")
    return {"x": x, "y": y, "logits": logits, "state": state}


def _run(server, asset: int, function: str, inputs: dict, states: dict, id_: int = 1):
    reply, arrays = server.ok(
        {"op": "run", "id": id_, "asset": asset, "function": function, "states": list(states)},
        {**inputs, **states},
    )
    assert reply["id"] == id_ and reply["ms"] > 0 and reply["states"] == list(states)
    outputs = {k: v for k, v in arrays.items() if k not in reply["states"]}
    return outputs, {k: arrays[k] for k in reply["states"]}, reply


# -- describing ----------------------------------------------------------------------------------


def test_ready_frame_says_assets_mode(server):
    assert server.ready["ok"] and server.ready["op"] == "ready"
    assert server.ready["protocol"] == wp.PROTOCOL and server.ready["mode"] == "assets"
    assert server.ready["pid"] == server.pid


def test_load_asset_describes_what_the_manifest_says(server, assets, core_bundle):
    """The runtime's descriptor (the server) and the exporter's record (the manifest) are two
    independent sources: they must agree on functions, names, shapes and dtypes, in order."""
    manifest = load_manifest(core_bundle)
    for graph, reply in assets.items():
        want = [
            {"name": name, **{k: f[k] for k in ("inputs", "outputs", "states")}}
            for name, f in manifest.graphs[graph]["functions"].items()
        ]
        assert reply["functions"] == want, graph
        assert reply["path"] == str(core_bundle / f"{graph}.aimodel")
    assert [len(f["states"]) for f in assets["decoder"]["functions"]] == [4, 4]
    assert assets["mlp"]["asset"] != assets["decoder"]["asset"]
    # The options are accepted (and change nothing on Linux) and echoed with their defaults.
    assert assets["mlp"]["options"] == {
        "compute_units": "default",
        "expect_frequent_reshapes": False,
    }

    described, _ = server.ok({"op": "describe"})
    assert described["mode"] == "assets" and described["protocol"] == wp.PROTOCOL
    ids = {str(r["asset"]): r["path"] for r in assets.values()}
    assert {k: v for k, v in described["assets"].items() if k in ids} == ids


def test_load_asset_options_are_checked_and_echoed(server, core_bundle):
    path = str(core_bundle / "mlp.aimodel")
    options = {"compute_units": "cpu-only", "expect_frequent_reshapes": True}
    reply, _ = server.ok({"op": "load_asset", "path": path, "options": options})
    assert reply["options"] == options
    assert server.ok({"op": "unload_asset", "asset": reply["asset"]})[0] == {
        "ok": True,
        "op": "unload_asset",
    }
    err = server.error({"op": "load_asset", "path": path, "options": {"compute_units": "npu"}})
    assert "compute_units 'npu'" in err["message"]
    # An unloaded id is gone (ids are never reused).
    err = server.error({"op": "run", "asset": reply["asset"], "function": "main"})
    assert f"no asset {reply['asset']}" in err["message"]


def test_load_asset_of_something_else_names_the_path(server, core_bundle, tmp_path):
    for path in (core_bundle, core_bundle / "manifest.json", tmp_path / "nowhere.aimodel"):
        err = server.error({"op": "load_asset", "path": str(path)})
        assert err["type"] == "UserError" and err["user"] is True
        assert str(path) in err["message"] and "not a Core AI asset" in err["message"]
    # A folder named like an asset whose program the runtime cannot read: an error, not the
    # runtime's abort (the server answers the next request below).
    bad = tmp_path / "bad.aimodel"
    bad.mkdir()
    (bad / "main.mlirb").write_bytes(b"not a program")
    (bad / "metadata.json").write_bytes(
        (core_bundle / "mlp.aimodel" / "metadata.json").read_bytes()
    )
    err = server.error({"op": "load_asset", "path": str(bad)})
    assert f"cannot load {bad}" in err["message"]
    assert server.ok({"op": "describe"})[0]["mode"] == "assets"


# -- running -------------------------------------------------------------------------------------


def test_stateless_function_equals_session_bit_for_bit(server, assets, reference):
    outputs, states, reply = _run(server, assets["mlp"]["asset"], "main", {"x": reference["x"]}, {})
    assert states == {} and reply["states"] == []
    assert reply["arrays"] == [{"name": "y", "dtype": "float32", "shape": [8, 256], "nbytes": 8192}]
    assert np.array_equal(outputs["y"], reference["y"])


def test_caller_owned_states_equal_session_bit_for_bit(server, assets, reference):
    asset = assets["decoder"]["asset"]
    functions = {f["name"]: f for f in assets["decoder"]["functions"]}
    states = _zero_states(functions["prefill"])
    for i, (fn, feed) in enumerate(_feeds()):
        outputs, states, reply = _run(server, asset, fn, feed, states, id_=10 + i)
        # Outputs first, then the states, in the descriptor's order.
        names = [a["name"] for a in reply["arrays"]]
        assert names == ["logits"] + [d["name"] for d in functions[fn]["states"]]
        assert np.array_equal(outputs["logits"], reference["logits"][i]), (i, fn)
    assert states.keys() == reference["state"].keys()
    for k, v in reference["state"].items():
        assert states[k].dtype == v.dtype and np.array_equal(states[k], v), k

    # The round trip matters: zeros instead of the returned states before step 2 answer
    # differently (so the comparison above can fail).
    states = _zero_states(functions["prefill"])
    for i, (fn, feed) in enumerate(_feeds()[:3]):
        if i == 2:
            states = _zero_states(functions[fn])
        outputs, states, _ = _run(server, asset, fn, feed, states)
    assert not np.array_equal(outputs["logits"], reference["logits"][2])


def test_bad_requests_are_error_replies_and_the_server_keeps_serving(server, assets, reference):
    asset = assets["decoder"]["asset"]
    decode = next(f for f in assets["decoder"]["functions"] if f["name"] == "decode")
    feed = _feeds()[1][1]
    states = _zero_states(decode)
    header = {"op": "run", "id": 40, "asset": asset, "function": "decode"}

    missing = dict(states)
    del missing["layers_1_v_cache"]
    err = server.error({**header, "states": list(missing)}, {**feed, **missing})
    assert err["type"] == "InputSpecError" and err["user"] is True
    assert "missing ['layers_1_v_cache']" in err["message"] and "every state" in err["message"]

    wrong = {**states, "layers_0_k_cache": states["layers_0_k_cache"].astype(np.float16)}
    err = server.error({**header, "states": list(wrong)}, {**feed, **wrong})
    assert err["type"] == "InputSpecError"
    assert err["message"].startswith("state 'layers_0_k_cache': dtype float16")
    assert "wants float32" in err["message"]

    err = server.error(
        {**header, "states": list(states)},
        {**feed, "tokens": np.zeros((1, 2), np.int32), **states},
    )
    assert err["type"] == "InputSpecError"
    assert err["message"] == "input 'tokens': shape [1, 2], the function wants [1, 1]"

    err = server.error(
        {**header, "states": list(states)}, {**feed, "start": np.zeros(1, np.int64), **states}
    )
    assert "input 'start': dtype int64, the function wants int32" in err["message"]

    # A state sent but not listed under "states" is an input the function does not have.
    err = server.error({**header, "states": []}, {**feed, **states})
    assert "'layers_1_v_cache'] are states, not inputs" in err["message"]
    assert "list them under 'states'" in err["message"]

    err = server.error({**header, "asset": 999, "states": []}, feed)
    assert err["type"] == "UserError" and "no asset 999" in err["message"]
    err = server.error({**header, "function": "nope", "states": []}, feed)
    assert "no function 'nope'" in err["message"] and "prefill" in err["message"]
    err = server.error({"op": "run", "id": 41, "function": "decode"})
    assert err["message"] == "request 'run' needs 'asset' (an asset id from load_asset)"

    for op in ("load_graph", "reset_state", "read_state"):
        err = server.error({"op": op, "graph": "decoder"})
        assert err["type"] == "UserError" and "belongs to bundle mode" in err["message"]
        assert "load_asset, run, unload_asset, describe, close" in err["message"]
    err = server.error({"op": "frobnicate"})
    assert err["message"].startswith("unknown op 'frobnicate'")

    outputs, _, _ = _run(server, assets["mlp"]["asset"], "main", {"x": reference["x"]}, {})
    assert np.array_equal(outputs["y"], reference["y"])
    assert server.proc.poll() is None


def test_a_state_named_like_an_input_is_refused_clearly(server, tmp_path):
    """The runtime's descriptor allows an input and a state of one name (a buffer exported
    under its input's name); a frame cannot carry both, so the call is a clear error."""

    class Clash(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("cache", torch.zeros(1, 4), persistent=False)

        def forward(self, cache):
            self.cache.add_(cache)
            return self.cache * 2.0

    bundle = export_single(Clash(), {"cache": torch.zeros(1, 4)}, ["y"], tmp_path / "b")
    reply, _ = server.ok({"op": "load_asset", "path": str(bundle / "graph.aimodel")})
    (fn,) = reply["functions"]
    assert [d["name"] for d in fn["inputs"]] == [d["name"] for d in fn["states"]] == ["cache"]
    err = server.error(
        {"op": "run", "asset": reply["asset"], "function": "main", "states": ["cache"]},
        {"cache": np.zeros((1, 4), np.float32)},
    )
    assert "['cache'] name both a state and an input or output" in err["message"]
    server.ok({"op": "unload_asset", "asset": reply["asset"]})


# -- lifetime ------------------------------------------------------------------------------------


@pytest.mark.parametrize("close", [True, False], ids=["close", "eof"])
def test_the_worker_exits_0_and_removes_its_lowered_folder(core_bundle, tmp_path, close):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    argv = [sys.executable, "-m", "conversion.core.runtime.serve", "--assets"]
    with open(tmp_path / "stderr.txt", "w+b") as log:
        child = AssetChild(argv, tmp, log)
        assert child.ready["mode"] == "assets" and child.lowered() == []
        child.ok({"op": "load_asset", "path": str(core_bundle / "mlp.aimodel")})
        (folder,) = child.lowered()
        assert os.listdir(tmp / folder) == ["1-mlp.aimodelx"]
        assert child.end(close=close) == 0
    assert os.listdir(tmp) == []


def test_cli_serve_wants_a_bundle_or_assets_not_both(core_bundle, capsys):
    for argv in (["serve"], ["serve", str(core_bundle), "--assets"]):
        assert cli_main(argv) == 2
        err = capsys.readouterr()
        assert err.out == "" and len(err.err.strip().splitlines()) == 1
        assert err.err.startswith("voxport: error: give a BUNDLE") and "--assets" in err.err
    assert cli_main(["serve", "--assets", "--graphs", "mlp"]) == 2
    assert "--graphs is for a BUNDLE" in capsys.readouterr().err
