"""Write what VoxportRunnerTests compare against: a self-test bundle and a Python Session's answers.

    .venv/bin/python ios/Tests/VoxportRunnerTests/make_recording.py OUT

OUT/bundle      the self-test bundle's `mlp` and `decoder` graphs (fp32)
OUT/recording   a greedy decode through an in-process Session (prefill, then decode steps) as a
                `voxport-replay/1` recording (recording.json, npz per step, manifest.json)
OUT/mlp.npz     one `mlp.main` call (x, y)
OUT/timing.json the in-process Session's median ms per call (mlp.main, decoder.decode)
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np

from conversion.core.runtime.ending import end_process
from conversion.core.runtime.session import Session
from conversion.selftest.export import build_bundle

PROMPT = [3, 1, 4, 1, 5, 9, 2, 6]
STEPS = 6
TIMED_CALLS = 50


def main(out: Path) -> None:
    bundle = build_bundle(out / "bundle", seed=5, only=["mlp", "decoder"])
    rec = out / "recording"
    rec.mkdir(parents=True, exist_ok=True)
    shutil.copy(bundle / "manifest.json", rec / "manifest.json")
    steps = []
    with Session(bundle) as s:

        def call(function: str, inputs: dict) -> np.ndarray:
            outputs = s.run("decoder", function, inputs)
            n = len(steps)
            np.savez(rec / f"{n:03d}-inputs.npz", **inputs)
            np.savez(rec / f"{n:03d}-outputs.npz", **outputs)
            steps.append(
                {
                    "graph": "decoder",
                    "function": function,
                    "state": "default",
                    "inputs": f"{n:03d}-inputs.npz",
                    "outputs": f"{n:03d}-outputs.npz",
                    "tolerance": 0.0,
                }
            )
            return outputs["logits"]

        s.reset_state("decoder")
        zero = np.zeros(1, np.int32)
        logits = call("prefill", {"tokens": np.array([PROMPT], np.int32), "start": zero})
        for i in range(STEPS):
            token = int(logits[0, -1].argmax())
            start = np.array([len(PROMPT) + i], np.int32)
            logits = call("decode", {"tokens": np.array([[token]], np.int32), "start": start})
        (rec / "recording.json").write_text(
            json.dumps({"format": "voxport-replay/1", "steps": steps}, indent=1)
        )

        x = np.random.default_rng(5).standard_normal((8, 256)).astype(np.float32)
        np.savez(out / "mlp.npz", x=x, y=s.run("mlp", "main", {"x": x})["y"])

        timing = {}
        feed = {"tokens": np.array([[1]], np.int32), "start": np.array([20], np.int32)}
        for key, graph, function, inputs in (
            ("mlp.main", "mlp", "main", {"x": x}),
            ("decoder.decode", "decoder", "decode", feed),
        ):
            s.run(graph, function, inputs, state="timing")
            times = []
            for _ in range(TIMED_CALLS):
                t0 = time.perf_counter()
                s.run(graph, function, inputs, state="timing")
                times.append((time.perf_counter() - t0) * 1e3)
            timing[key] = float(np.median(times))
        (out / "timing.json").write_text(json.dumps(timing))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
    end_process(0)  # everything is written and the session closed (see its docstring)
