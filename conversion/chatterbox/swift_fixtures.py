"""Chatterbox fixtures for the Swift host (ios/, VoxportHost/Chatterbox), written by the Python
host code itself.

`conversion.cli.swift_fixtures.write_fixtures` calls :func:`write_fixtures` for
`ios/Tests/Fixtures/chatterbox/`. Every expected value comes from the code the Swift host must
agree with: `conversion.core.host.sampling` (each processor and the draw, Chatterbox's order and the
others), `speech_tokens_for_s3gen`, and `ChatterboxPipeline.synthesize` (T3 loop, flow Euler
loop, HiFT source/STFT/iSTFT, trim_fade) run over a recording session instead of Core AI: the
graph outputs are seeded stand-ins and T3's tables are 8 wide (the host never reads the width).
The pipeline's calls are written as a `voxport-replay/1` recording (ReplayRunner's format), the
host files as the bundle carries them, and the per-stage results beside them. Bytes are
deterministic (seeded draws, pinned zip clock).
"""

from __future__ import annotations

import json
import types
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import numpy as np

from conversion.core.host.sampling import (
    HF_ORDER,
    SamplingConfig,
    SamplingOrder,
    process_logits,
    sample,
)
from conversion.core.runtime.session import StandInSession
from conversion.s3gen.hift import host as host_hift

from .config import REDUCED, ChatterboxConfig
from .export import DEFAULT_VOICE, HOST_ARRAYS
from .pipeline import ChatterboxPipeline, ChunkDraws, SpeakOptions, speech_tokens_for_s3gen
from .sampling import CHATTERBOX_ORDER
from .t3.graphs import START_SPEECH, STOP_SPEECH, T3_VOCAB
from .text import TextChunk
from .text_fixtures import write_text_fixtures
from .voice import Voice
from .weights import START_TEXT, STOP_TEXT

HIDDEN = 8  # T3's table width here (1024 in a bundle)
# Reduced sizes, smaller buckets still: one chunk fits P48, N16, F32 (estimator), F16 (vocoder).
CONFIG = ChatterboxConfig(
    **{
        **REDUCED.to_json(),
        "name": "swift-fixtures",
        "prefill_buckets": (48, 96),
        "speech_budget": 16,
        "encoder_tokens": (16, 32),
        "estimator_frames": (32, 64),
        "vocoder_frames": (16, 32),
    }
)
TEXT_IDS = [START_TEXT, 5, 17, 30, 101, STOP_TEXT]
PROMPT_TOKENS = 6
SEED = 7
# The fake T3 logits push these tokens at these steps: a start-of-speech (drop_invalid keeps
# what follows it), a special id (dropped), and the stop token.
SCRIPT = {2: START_SPEECH, 6: 6563, 12: STOP_SPEECH}
SAMPLING_VOCAB = 64
ORDERS = {
    "chatterbox": CHATTERBOX_ORDER,
    "hf": HF_ORDER,
    "raw": SamplingOrder(filter_on_raw_scores=True),
    "whole": SamplingOrder(min_p_before_top_p=True, top_p_over_whole_vocab=True),
    "crossing": SamplingOrder(top_p_drops_crossing_token=True),
}
SAMPLING_CASES = (
    (
        "chatterbox",
        {
            "temperature": 0.8,
            "min_p": 0.05,
            "top_p": 1.0,
            "repetition_penalty": 1.2,
            "cfg_weight": 0.5,
        },
    ),
    (
        "chatterbox",
        {
            "temperature": 0.8,
            "min_p": 0.05,
            "top_p": 0.8,
            "repetition_penalty": 1.2,
            "cfg_weight": 0.5,
        },
    ),
    (
        "chatterbox",
        {
            "temperature": 1.3,
            "min_p": 0.2,
            "top_p": 0.5,
            "repetition_penalty": 2.0,
            "cfg_weight": 1.5,
        },
    ),
    ("hf", {"temperature": 0.7, "top_k": 10, "top_p": 0.9, "min_p": 0.02}),
    ("hf", {"temperature": 1.0}),
    ("raw", {"temperature": 0.5, "top_k": 7, "top_p": 0.6}),
    ("whole", {"temperature": 0.9, "min_p": 0.1, "top_p": 0.7, "repetition_penalty": 1.1}),
    ("crossing", {"temperature": 1.1, "top_p": 0.75, "cfg_weight": 0.3}),
)


def _json(path: Path, payload) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=1, sort_keys=True) + "\n")


def _f32(a) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(a, dtype=np.float32))


def _write_sampling(root: Path, zip_clock) -> None:
    """Each processor's output and the drawn token, on small seeded rows, per config."""
    rng = np.random.default_rng(11)
    arrays, cases = {}, []
    for i, (order, knobs) in enumerate(SAMPLING_CASES):
        cfg = SamplingConfig(**knobs, order=ORDERS[order])
        logits = _f32(rng.standard_normal(SAMPLING_VOCAB) * 3)
        uncond = _f32(logits * 0.5 + rng.standard_normal(SAMPLING_VOCAB))
        logits[:3] = [-2.0, 2.0, 0.0]  # both signs and zero under the penalty
        previous = rng.integers(-1, SAMPLING_VOCAB, 9).astype(np.int64)
        previous[:3] = [0, 1, 2]
        u = _f32(rng.random(SAMPLING_VOCAB))
        u[5] = 0.0  # the clip at both ends
        u[6] = 1.0
        scores = process_logits(logits, cfg, previous, uncond, candidates=None)
        token = sample(logits, u, cfg, previous, uncond, candidates=None)
        prefix = f"case{i}_"
        arrays.update(
            {
                prefix + "logits": logits,
                prefix + "uncond": uncond,
                prefix + "previous": previous,
                prefix + "uniforms": u,
                prefix + "scores": scores,
            }
        )
        cases.append(
            {"order": order, **knobs, "token": int(token), "kept": int(np.isfinite(scores).sum())}
        )
    with zip_clock():
        np.savez(root / "sampling.npz", **arrays)
    _json(root / "sampling.json", {"vocab": SAMPLING_VOCAB, "cases": cases})
    drops = [
        [1, 2, 3],
        [START_SPEECH, 4, 5],
        [7, START_SPEECH, 8, START_SPEECH, 9, 6563, 10],
        [6561 - 1, 6561, 6562, 8000],
        [],
    ]
    _json(
        root / "drop_invalid.json",
        {
            "cases": [
                {"tokens": t, "speech": speech_tokens_for_s3gen(np.array(t, np.int64)).tolist()}
                for t in drops
            ]
        },
    )


def _tables(rng: np.random.Generator) -> dict[str, dict[str, np.ndarray]]:
    """Host tables of the bundle's names and layout: seeded T3 tables (8 wide), a seeded
    speaker projection, and HiFT's published constants."""
    t3 = {
        "text_emb": _f32(rng.standard_normal((300, HIDDEN))),
        "text_pos_emb": _f32(rng.standard_normal((32, HIDDEN))),
        "speech_emb": _f32(rng.standard_normal((T3_VOCAB, HIDDEN))),
        "speech_pos_emb": _f32(rng.standard_normal((40, HIDDEN))),
    }
    flow = {
        "spk_embed_affine_weight": _f32(rng.standard_normal((80, 192)) * 0.1),
        "spk_embed_affine_bias": _f32(rng.standard_normal(80) * 0.1),
        "inference_cfg_rate": np.float32(0.7),
        "t_scheduler_cosine": np.int32(1),
        "vocab_size": np.int32(6561),
        "token_mel_ratio": np.int32(2),
        "pre_lookahead_len": np.int32(3),
    }
    from scipy.signal import get_window

    fade = np.zeros(960, np.float32)  # S3Token2Wav.trim_fade, as the publisher builds it
    fade[480:] = (np.cos(np.linspace(np.pi, 0, 480)) + 1) / 2
    hift = {
        "l_linear_weight": _f32(rng.standard_normal((1, 9)) * 0.3),
        "l_linear_bias": _f32([0.01]),
        "stft_window": get_window("hann", 16, fftbins=True).astype(np.float32),
        "n_fft": np.array(16, np.int64),
        "hop": np.array(4, np.int64),
        "upsample": np.array(480, np.int64),
        "harmonics": np.array(9, np.int64),
        "sampling_rate": np.array(24000, np.int64),
        "sine_amp": np.array(0.1, np.float64),
        "noise_std": np.array(0.003, np.float64),
        "voiced_threshold": np.array(10.0, np.float64),
        "audio_limit": np.array(0.99, np.float64),
        "trim_fade": fade,
    }
    return {"t3": t3, "flow": flow, "hift": hift}


def _voice(rng: np.random.Generator) -> Voice:
    return Voice(
        t3_speaker_emb=rng.standard_normal((1, 256)),
        t3_prompt_tokens=rng.integers(0, 6561, (1, 10)),
        cond_emb_base=rng.standard_normal((1, 34, HIDDEN)),
        emotion_adv_weight=rng.standard_normal(HIDDEN),
        exaggeration=0.5,
        prompt_tokens=rng.integers(0, 6561, (1, PROMPT_TOKENS)),
        prompt_feat=rng.standard_normal((1, 2 * PROMPT_TOKENS, 80)) - 5,
        xvector=rng.standard_normal((1, 192)),
        source="swift-fixtures",
    )


class _RecordingSession(StandInSession):
    """Stands in for a Core AI session: answers each call with seeded outputs at the
    bucket's sizes and records inputs and outputs (the Swift ReplayRunner replays them)."""

    def __init__(self, rng: np.random.Generator, manifest: dict) -> None:
        self.rng = rng
        self.manifest = types.SimpleNamespace(graphs=manifest["graphs"])
        self.calls: list[tuple[str, str, str, dict, dict]] = []
        self.t3_step = 0

    def reset_state(self, graph: str, state: str = "default") -> None:
        self.t3_step = 0

    def since_mark(self) -> tuple[dict, dict]:
        return {}, {}

    def _t3(self) -> dict:
        r = self.rng
        cond = r.standard_normal(T3_VOCAB) * 2
        uncond = cond * 0.5 + r.standard_normal(T3_VOCAB) * 0.5
        if self.t3_step in SCRIPT:
            cond[SCRIPT[self.t3_step]] += 40.0
        self.t3_step += 1
        return {"logits": _f32(np.stack([cond, uncond]))}

    def _outputs(self, graph: str, inputs: dict) -> dict:
        r = self.rng
        if graph == "t3":
            return self._t3()
        if graph == "flow_encoder":
            n = inputs["tokens"].shape[1]
            return {"mu": _f32(r.standard_normal((1, 80, 2 * n)))}
        if graph == "flow_estimator":
            return {"velocity": _f32(r.standard_normal(inputs["x"].shape))}
        f = inputs["mel"].shape[2]
        if graph == "hift_f0":
            return {"f0": _f32(r.uniform(-40, 300, (1, f)))}
        frames = inputs["source_stft"].shape[2]
        return {
            "magnitude": _f32(np.abs(r.standard_normal((1, 9, frames))) * 40),  # some > 100: clip
            "phase": _f32(r.uniform(-np.pi, np.pi, (1, 9, frames))),
        }

    def run(self, graph: str, function: str, inputs: dict, state: str = "default") -> dict:
        out = self._outputs(graph, inputs)
        self.calls.append((graph, function, state, dict(inputs), out))
        return out


def _manifest() -> dict:
    """The fake bundle's manifest: the config (buckets) the host reads, no graph assets."""
    graphs = {
        g: {"asset": f"{g}.aimodel", "precision": "fp32", "sha256": "", "functions": {}, "meta": {}}
        for g in ("t3", "flow_encoder", "flow_estimator", "hift_f0", "hift_trunk")
    }
    graphs["hift_trunk"]["meta"]["buckets"] = [{"F": f} for f in CONFIG.vocoder_frames]
    return {
        "format": "voxport-bundle/1",
        "model": "chatterbox",
        "precision": "fp32",
        "graphs": graphs,
        "config": {"config": CONFIG.to_json()},
    }


TOLERANCE = {
    "t3": 0.0,
    "flow_encoder": 0.0,
    "flow_estimator": 1e-6,
    "hift_f0": 0.0,
    "hift_trunk": 1e-4,
}


def _write_recording(root: Path, session: _RecordingSession, zip_clock) -> list[dict]:
    steps = []
    rec = root / "recording"
    rec.mkdir(parents=True, exist_ok=True)
    with zip_clock():
        for i, (graph, function, state, inputs, outputs) in enumerate(session.calls):
            names = {"inputs": f"{i:03d}-inputs.npz", "outputs": f"{i:03d}-outputs.npz"}
            np.savez(
                rec / names["inputs"], **{k: np.ascontiguousarray(v) for k, v in inputs.items()}
            )
            np.savez(rec / names["outputs"], **outputs)
            steps.append(
                {
                    "graph": graph,
                    "function": function,
                    "state": state,
                    "tolerance": TOLERANCE[graph],
                    **names,
                }
            )
    _json(rec / "recording.json", {"format": "voxport-replay/1", "steps": steps})
    return steps


def _write_pipeline(root: Path, zip_clock) -> None:
    rng = np.random.default_rng(5)
    tables = _tables(rng)
    voice = _voice(rng)
    manifest = _manifest()
    _json(root / "manifest.json", manifest)
    host = root / "bundle_files"
    host.mkdir(parents=True, exist_ok=True)
    with zip_clock():
        for part, name in HOST_ARRAYS.items():
            np.savez(host / name, **tables[part])
        voice.save(host / DEFAULT_VOICE)
        with np.load(host / DEFAULT_VOICE) as z:  # a voice file that lacks its x-vector
            np.savez(
                root / "voice_without_xvector.npz", **{k: z[k] for k in z.files if k != "xvector"}
            )

    pipeline = object.__new__(ChatterboxPipeline)
    pipeline.config, pipeline.arrays, pipeline.graphs = CONFIG, tables, list(manifest["graphs"])
    pipeline.session = _RecordingSession(np.random.default_rng(9), manifest)
    chunk = TextChunk("swift fixtures", np.asarray(TEXT_IDS, np.int32))
    options = SpeakOptions()
    result = pipeline.synthesize(chunk, voice, options, seed=SEED, index=0)
    # The draws synthesize made from the seed, made again the same way.
    redraw = ChunkDraws.from_seed(SEED, 0)
    uniforms = np.stack([redraw.uniforms(s) for s in range(result.t3.steps)])
    noise = result.flow.xs[0]
    hift_draws = host_hift.draw_source_noise(result.flow.mel.shape[2] * 480, SEED * 1000)
    assert np.array_equal(
        host_hift.harmonic_source(tables["hift"], result.hift.f0, hift_draws), result.hift.source
    )
    steps = _write_recording(root, pipeline.session, zip_clock)

    out = root / "pipeline"
    out.mkdir(parents=True, exist_ok=True)
    flow = result.flow
    with zip_clock():
        np.savez(
            out / "results.npz",
            uniforms=uniforms,
            noise=noise,
            phase=hift_draws["phase"],
            sine_noise=hift_draws["sine_noise"],
            tokens=result.t3.tokens,
            speech_tokens=result.speech_tokens,
            mu=flow.mu,
            states=np.stack(flow.xs),
            velocities=np.stack(flow.velocities),
            t_span=flow.t_span,
            mel=flow.mel,
            f0=result.hift.f0,
            source=result.hift.source,
            wav_clamped=result.hift.wav,
            wav=result.wav,
            cond_emb=voice.cond_emb(options.exaggeration),
            spks=host_flow_spks(tables["flow"], voice.xvector),
        )
    _json(
        root / "pipeline.json",
        {
            "text_ids": TEXT_IDS,
            "seed": SEED,
            "steps": options.n_steps,
            "tokens": result.t3.tokens.tolist(),
            "speech_tokens": result.speech_tokens.tolist(),
            "stopped": bool(result.t3.stopped),
            "t3_steps": result.t3.steps,
            "calls": [f"{s['graph']}.{s['function']}" for s in steps],
            "audio_samples": int(result.wav.size),
        },
    )


def host_flow_spks(arrays: dict[str, np.ndarray], xvector: np.ndarray) -> np.ndarray:
    from conversion.s3gen.flow.host import speaker_projection

    return speaker_projection(arrays, xvector)


def write_fixtures(root: Path, zip_clock: Callable[[], AbstractContextManager]) -> None:
    """Every Chatterbox fixture under `root` (`.../Fixtures/chatterbox`); `zip_clock()` pins the
    clock np.savez stamps members with (`conversion.cli.swift_fixtures` passes its own)."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    _write_sampling(root, zip_clock)
    _write_pipeline(root, zip_clock)
    write_text_fixtures(root / "text")
