"""Chatterbox Turbo's T3 host, for the Swift one (ios/Sources/VoxportHost/ChatterboxTurbo,
`ChatterboxTurboT3`): the files of `FOLDER`, written by the Python host code itself.

- `t3_host.npz`: `t3_host_arrays` of a small seeded T3 (the publisher's `T3` at 1 layer, 16
  wide, calibrated as `weights.random_snapshot` calibrates, the start token's head bias raised
  so that it is a real candidate at draw 0), the text table cut to its first TEXT_ROWS rows
  (the case's ids lie below; the host only bounds ids by the table): 0.5 MB, mostly speech_emb.
- `case.npz` / `case.json`: the conditioning, text ids, `prefill_embeds` and each draw's
  `speech_step_embeds`, the uniforms of every draw, and what `generate` returned (tokens,
  stopped, draws) over the exported graph (converter + Core AI runtime) with `turbo_sampling()`.
- `recording/`: every graph call of that loop, inputs and the runtime's outputs (the logits), as
  a `voxport-replay/1` recording with a manifest (Swift's ReplayRunner replays it).
- `sampling.npz` / `sampling.json`: `process_logits` in `TURBO_ORDER` on seeded rows (-inf
  entries, penalised ids of both signs and at -inf, repeated ids) at several knob settings.

and of `PIPELINE_FOLDER`, for the Swift `ChatterboxTurboPipeline`: one whole chunk of
`TurboPipeline.synthesize` (T3 loop, the S3Gen tokens with their silence tail, the shared
mean-flow loop, HiFT, trim_fade) over a recording stand-in session (Chatterbox's, its T3
answers one row of Turbo's vocabulary): `manifest.json`, `bundle_files/` (the host tables and
voice as a bundle carries them), `recording/` (every call), `results.npz` (the draws made from
the seed, each stage's result) and `pipeline.json`.

`write_fixtures` writes them with the text front end's (`text_fixtures.py`) under
`ios/Tests/Fixtures/chatterbox_turbo/` (`voxport fixtures swift`, as every model's);
`tests/chatterbox_turbo/test_swift_fixtures.py` checks they are current. Bytes are
deterministic on one machine (seeded weights and draws, pinned zip clock); another CPU may
move the logits' last bits (the check's tolerance).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
import tempfile
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import numpy as np
import torch

from conversion.core.bundle import BundleWriter
from conversion.core.host.sampling import SamplingConfig, process_logits
from conversion.core.runtime.session import Session
from conversion.fixtures.plumbing import pinned_zip_clock
from conversion.s3gen.snapshot import randomize_untrained

from .calibration import calibrate_t3
from .config import REDUCED, sizes_patched
from .sampling import TURBO_ORDER, turbo_sampling
from .t3.graphs import GRAPH, START_SPEECH, T3_VOCAB, t3_graph_spec
from .t3.host import TurboCond, generate, prefill_embeds, speech_step_embeds, t3_host_arrays
from .text_fixtures import write_text_fixtures
from .weights import _turbo_t3_hp

ROOT = Path(__file__).resolve().parents[2] / "ios/Tests/Fixtures/chatterbox_turbo"
FOLDER = ROOT / "t3"
PIPELINE_FOLDER = ROOT / "pipeline"
# 16 prefill rows (speaker, 6 prompt tokens, 8 text ids, start): bucket 24 of (12, 24), so the
# host pads; the calibrated stop logit ties the top one at GPT-2 position 26 (stop_position:
# 1 + 8 + 8 + 1 + STOP_STEPS 8), about ten draws in.
CONFIG = dataclasses.replace(
    REDUCED,
    t3_layers=1,
    t3_hidden=16,
    t3_heads=2,
    t3_positions=64,
    t3_prompt_tokens_max=8,
    text_budget=8,
)
BUCKETS = (12, 24)
KV_LENGTH = 48
MAX_NEW_TOKENS = 24
TEXT_ROWS = 32
TEXT_IDS = [5, 17, 30, 2, 11, 29, 8, 23]
PROMPT_TOKENS = 6
WEIGHTS_SEED = 3
COND_SEED = 101
# Picked (among 40) so that both faults the Swift tests show move a draw here: the penalty
# first (4 of the 11 draws, teacher-forced) and draw 0 without the start token in its history
# (draw 0 is peaked: few seeds let the start token's penalty decide it).
DRAWS_SEED = 38
# The start token's head row is zero after calibration (logit = its bias): raised near draw
# 0's top logit (16.1) so that its penalty there matters, below it so that the tokens vary.
START_BIAS = 14.0
SAMPLING_VOCAB = 512
SAMPLING_KNOBS = (
    {},  # turbo_sampling's defaults: top-k 1000 off at this vocabulary, top-p 0.95 binds
    {"top_k": 50},
    {"top_k": 300, "top_p": 0.8, "temperature": 1.3},
    {"top_k": 0, "top_p": 0.5, "repetition_penalty": 2.0, "temperature": 0.6},
)
SAMPLING_SCALES = (0.5, 3.0)
SAMPLING_REPEATS = 2


def small_t3() -> Any:
    """The publisher's T3 at CONFIG's sizes, seeded and calibrated like a random snapshot's."""
    from chatterbox.models.t3 import T3

    torch.manual_seed(WEIGHTS_SEED)
    with sizes_patched(CONFIG):
        t3 = T3(_turbo_t3_hp())
    del t3.tfmr.wte  # as from_local does: T3 feeds embeddings
    randomize_untrained(t3, WEIGHTS_SEED)
    calibrate_t3(t3, WEIGHTS_SEED, CONFIG)
    with torch.no_grad():
        t3.speech_head.bias[START_SPEECH] += START_BIAS
    return t3.eval()


def host_arrays(t3: Any) -> dict[str, np.ndarray]:
    arrays = t3_host_arrays(t3)
    arrays["text_emb"] = np.ascontiguousarray(arrays["text_emb"][:TEXT_ROWS])
    return arrays


def case_cond() -> TurboCond:
    rng = np.random.default_rng(COND_SEED)
    speaker = rng.standard_normal(256).astype(np.float32)
    speaker /= np.linalg.norm(speaker)
    return TurboCond(
        speaker_emb=speaker.astype(np.float32),
        prompt_tokens=rng.integers(0, 6561, PROMPT_TOKENS).astype(np.int64),
    )


class _Recorder:
    """A Session that keeps each call's inputs and outputs (ReplayRunner's recording)."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.calls: list[tuple[str, str, str, dict, dict]] = []

    def reset_state(self, graph: str, state: str = "default") -> None:
        self.session.reset_state(graph, state)

    def run(self, graph: str, function: str, feed: dict, state: str = "default") -> dict:
        out = self.session.run(graph, function, feed, state=state)
        outputs = {k: np.ascontiguousarray(v) for k, v in out.items()}
        self.calls.append((graph, function, state, dict(feed), outputs))
        return out


def _json(path: Path, payload: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=1, sort_keys=True) + "\n")


def _manifest(meta: dict) -> dict:
    """The recording's bundle manifest: the t3 graph's meta (buckets, KV length), no asset."""
    graph = {
        "asset": f"{GRAPH}.aimodel",
        "precision": "fp32",
        "sha256": "",
        "functions": {},
        "meta": meta,
    }
    return {
        "format": "voxport-bundle/1",
        "model": "chatterbox_turbo",
        "precision": "fp32",
        "graphs": {GRAPH: graph},
        "config": {"config": CONFIG.to_json()},
    }


def _write_recording(root: Path, calls: list, meta: dict) -> None:
    rec = root / "recording"
    rec.mkdir(parents=True, exist_ok=True)
    steps = []
    for i, (graph, function, state, inputs, outputs) in enumerate(calls):
        names = {"inputs": f"{i:03d}-inputs.npz", "outputs": f"{i:03d}-outputs.npz"}
        np.savez(rec / names["inputs"], **{k: np.ascontiguousarray(v) for k, v in inputs.items()})
        np.savez(rec / names["outputs"], **outputs)
        # The speaker row is a 256-long dot product (numpy's order vs Swift's); the rest exact.
        steps.append(
            {"graph": graph, "function": function, "state": state, "tolerance": 1e-5, **names}
        )
    _json(rec / "recording.json", {"format": "voxport-replay/1", "steps": steps})
    _json(rec / "manifest.json", _manifest(meta))


def _write_loop(root: Path) -> None:
    t3 = small_t3()
    arrays = host_arrays(t3)
    cond = case_cond()
    text = np.asarray(TEXT_IDS, np.int64)
    sampling = turbo_sampling()
    rng = np.random.default_rng(DRAWS_SEED)
    uniforms = rng.random((MAX_NEW_TOKENS, T3_VOCAB), dtype=np.float32)
    spec = t3_graph_spec(t3, KV_LENGTH, BUCKETS)
    with tempfile.TemporaryDirectory() as tmp:
        dest = Path(tmp) / "fp32"
        # the converter reports on stdout; a fixture writer's stdout is its caller's (the
        # --check's problem list)
        with (
            contextlib.redirect_stdout(sys.stderr),
            BundleWriter(dest, "chatterbox_turbo", "fp32", overwrite=True) as writer,
        ):
            writer.add_graph(spec)
        with Session(dest) as session:
            recorder = _Recorder(session)
            result = generate(
                recorder, arrays, cond, text, sampling, uniforms, MAX_NEW_TOKENS, BUCKETS, KV_LENGTH
            )
    fed = [int(t) for t in result.tokens]  # the draws fed back: every one but the last
    steps = np.stack([speech_step_embeds(arrays, t)[0, 0] for t in fed])
    _write_recording(root, recorder.calls, spec.meta)
    np.savez(root / "t3_host.npz", **arrays)
    np.savez(
        root / "case.npz",
        speaker_emb=np.asarray(cond.speaker_emb, np.float32),
        prompt_tokens=np.asarray(cond.prompt_tokens, np.int64),
        text_ids=text,
        prefill_embeds=prefill_embeds(arrays, cond, text)[0],
        step_embeds=steps.astype(np.float32),
        uniforms=uniforms[: result.steps],
    )
    _json(
        root / "case.json",
        {
            "text_ids": TEXT_IDS,
            "prompt_tokens": np.asarray(cond.prompt_tokens).tolist(),
            "max_new_tokens": MAX_NEW_TOKENS,
            "prefill_buckets": list(BUCKETS),
            "kv_length": KV_LENGTH,
            "sampling": {
                "temperature": sampling.temperature,
                "top_k": sampling.top_k,
                "top_p": sampling.top_p,
                "repetition_penalty": sampling.repetition_penalty,
            },
            "tokens": result.tokens.tolist(),
            "stopped": bool(result.stopped),
            "draws": result.steps,
            "calls": [f"{c[0]}.{c[1]}" for c in recorder.calls],
        },
    )


def _sampling_case(rng: np.random.Generator, scale: float, step0: bool) -> tuple:
    """Logits with -inf entries, and a history: one id at a step-0 case (the start token's
    role: a real candidate), else repeats, ids of both signs and one at -inf."""
    v = SAMPLING_VOCAB
    logits = (rng.standard_normal(v) * scale).astype(np.float32)
    top = np.argsort(-logits)[:30]
    if step0:
        start = int(rng.integers(0, v))
        logits[start] = logits[top[rng.integers(0, 5)]] + np.float32(0.1)
        history = np.array([start], np.int64)
    else:
        picks = np.concatenate([top[rng.integers(0, 30, 8)], rng.integers(0, v, 8)])
        history = np.concatenate([picks, picks[:5]]).astype(np.int64)
        logits[history[3]] = -np.inf
    logits[rng.integers(0, v, 6)] = -np.inf
    return logits, history


def _write_sampling(root: Path) -> None:
    rng = np.random.default_rng(11)
    arrays, cases = {}, []
    for knobs in SAMPLING_KNOBS:
        cfg = dataclasses.replace(turbo_sampling(), **knobs)
        assert isinstance(cfg, SamplingConfig) and cfg.order == TURBO_ORDER
        for scale in SAMPLING_SCALES:
            for repeat in range(SAMPLING_REPEATS):
                logits, history = _sampling_case(rng, scale, step0=repeat == 0)
                scores = process_logits(logits, cfg, history, candidates=None)
                prefix = f"case{len(cases)}_"
                arrays.update(
                    {
                        prefix + "logits": logits,
                        prefix + "previous": history,
                        prefix + "scores": scores,
                    }
                )
                cases.append(
                    {
                        "temperature": cfg.temperature,
                        "top_k": cfg.top_k,
                        "top_p": cfg.top_p,
                        "repetition_penalty": cfg.repetition_penalty,
                        "kept": int(np.isfinite(scores).sum()),
                    }
                )
    np.savez(root / "sampling.npz", **arrays)
    _json(root / "sampling.json", {"vocab": SAMPLING_VOCAB, "cases": cases})


def write_swift_fixtures(
    root: Path, zip_clock: Callable[[], AbstractContextManager] = pinned_zip_clock
) -> None:
    root.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)
    with zip_clock():
        _write_loop(root)
        _write_sampling(root)


def write_pipeline_fixtures(
    root: Path, zip_clock: Callable[[], AbstractContextManager] = pinned_zip_clock
) -> None:
    from .swift_pipeline_fixtures import write_pipeline

    root.mkdir(parents=True, exist_ok=True)
    with zip_clock():
        write_pipeline(root)


def write_fixtures(root: Path, zip_clock: Callable[[], AbstractContextManager]) -> None:
    """Every Chatterbox Turbo fixture under `root` (`.../Fixtures/chatterbox_turbo`);
    `zip_clock()` pins the clock np.savez stamps members with (`voxport fixtures swift`)."""
    root = Path(root)
    write_swift_fixtures(root / FOLDER.name, zip_clock)
    write_pipeline_fixtures(root / PIPELINE_FOLDER.name, zip_clock)
    write_text_fixtures(root / "text")
