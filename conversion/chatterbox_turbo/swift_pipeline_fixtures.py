"""One whole chunk of `TurboPipeline.synthesize`, recorded for the Swift `ChatterboxTurboPipeline`
(`swift_fixtures.PIPELINE_FOLDER`; `swift_fixtures.write_fixtures` and its currency test call this).

The pipeline runs over Chatterbox's recording stand-in session (`conversion/chatterbox/
swift_fixtures.py`: seeded outputs at the bucket's sizes, every call recorded as a
`voxport-replay/1` recording) with Turbo's T3 answering one row of Turbo's vocabulary; the host
tables are seeded at Turbo's names (T3 8 wide: the host never reads the width), the flow's are
Chatterbox's fixture tables with `meanflow` = 1 (so the loop is the mean-flow one), HiFT's the
published constants. Every expected value is what the Python host computed.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

from conversion.chatterbox import swift_fixtures as chatterbox_fixtures
from conversion.s3gen.flow.host import speaker_projection
from conversion.s3gen.hift import host as host_hift

from .config import REDUCED
from .export import DEFAULT_VOICE, HOST_ARRAYS
from .pipeline import ChunkDraws, SpeakOptions, TurboPipeline
from .t3.graphs import START_SPEECH, STOP_SPEECH, T3_VOCAB
from .text import TextChunk
from .voice import TurboVoice

HIDDEN = 8
TEXT_ROWS = 64
# One chunk fits P24, N32 (prompt 6 + speech 11 tokens), F64 (34 frames), vocoder F32 (22).
CONFIG = dataclasses.replace(
    REDUCED,
    name="swift-fixtures",
    t3_prompt_tokens_max=8,
    text_budget=8,
    speech_budget=16,
    prompt_tokens_max=8,
    prefill_buckets=(24,),
    kv_length=48,
    encoder_tokens=(16, 32),
    estimator_frames=(32, 64),
    vocoder_frames=(16, 32),
)
TEXT_IDS = [5, 17, 30, 2, 11, 29]
PROMPT_TOKENS = 6
SEED = 7
# T3's stand-in logits push these tokens at these draws: a start-of-speech mid-sequence (Turbo
# drops it and keeps what follows; Chatterbox's drop_invalid would cut there) and the stop.
SCRIPT = {3: START_SPEECH, 9: STOP_SPEECH}
TOLERANCE = {**chatterbox_fixtures.TOLERANCE, "t3": 1e-5}  # T3's speaker row: a dot product


class _TurboRecordingSession(chatterbox_fixtures._RecordingSession):
    """Chatterbox's recording stand-in; T3 answers [1, 6563] (no CFG row)."""

    def _t3(self) -> dict:
        logits = self.rng.standard_normal(T3_VOCAB) * 2
        if self.t3_step in SCRIPT:
            logits[SCRIPT[self.t3_step]] += 40.0
        self.t3_step += 1
        return {"logits": np.asarray(logits[None], np.float32)}


def _tables(rng: np.random.Generator) -> dict[str, dict[str, np.ndarray]]:
    tables = chatterbox_fixtures._tables(rng)
    tables["flow"]["meanflow"] = np.int32(1)
    f32 = chatterbox_fixtures._f32
    tables["t3"] = {
        "text_emb": f32(rng.standard_normal((TEXT_ROWS, HIDDEN))),
        "speech_emb": f32(rng.standard_normal((T3_VOCAB, HIDDEN))),
        "spkr_enc_weight": f32(rng.standard_normal((HIDDEN, 256)) * 0.1),
        "spkr_enc_bias": f32(rng.standard_normal(HIDDEN) * 0.1),
    }
    return tables


def _voice(rng: np.random.Generator) -> TurboVoice:
    return TurboVoice(
        t3_speaker_emb=rng.standard_normal((1, 256)),
        t3_prompt_tokens=rng.integers(0, 6561, (1, PROMPT_TOKENS)),
        prompt_tokens=rng.integers(0, 6561, (1, PROMPT_TOKENS)),
        prompt_feat=rng.standard_normal((1, 2 * PROMPT_TOKENS, 80)) - 5,
        xvector=rng.standard_normal((1, 192)),
        source="swift-fixtures",
    )


def _manifest() -> dict:
    manifest = chatterbox_fixtures._manifest()
    manifest["model"] = "chatterbox_turbo"
    manifest["config"] = {"config": CONFIG.to_json()}
    return manifest


def _json(path: Path, payload: object) -> None:
    path.write_text(json.dumps(payload, indent=1, sort_keys=True) + "\n")


def _write_recording(root: Path, calls: list) -> list[dict]:
    """The calls as a `voxport-replay/1` recording (Chatterbox's writer, Turbo's tolerances)."""
    rec = root / "recording"
    rec.mkdir(parents=True, exist_ok=True)
    steps = []
    for i, (graph, function, state, inputs, outputs) in enumerate(calls):
        names = {"inputs": f"{i:03d}-inputs.npz", "outputs": f"{i:03d}-outputs.npz"}
        np.savez(rec / names["inputs"], **{k: np.ascontiguousarray(v) for k, v in inputs.items()})
        np.savez(rec / names["outputs"], **outputs)
        steps.append(
            {"graph": graph, "function": function, "state": state, "tolerance": TOLERANCE[graph]}
            | names
        )
    _json(rec / "recording.json", {"format": "voxport-replay/1", "steps": steps})
    return steps


def write_pipeline(root: Path) -> None:
    """The fixtures into `root` (the caller pins the zip clock)."""
    rng = np.random.default_rng(5)
    tables, voice, manifest = _tables(rng), _voice(rng), _manifest()
    _json(root / "manifest.json", manifest)
    host = root / "bundle_files"
    host.mkdir(parents=True, exist_ok=True)
    for part, name in HOST_ARRAYS.items():
        np.savez(host / name, **tables[part])
    voice.save(host / DEFAULT_VOICE)

    pipeline = object.__new__(TurboPipeline)
    pipeline.config, pipeline.arrays, pipeline.graphs = CONFIG, tables, list(manifest["graphs"])
    pipeline.session = _TurboRecordingSession(np.random.default_rng(9), manifest)
    chunk = TextChunk("swift fixtures", np.asarray(TEXT_IDS, np.int64))
    options = SpeakOptions()
    result = pipeline.synthesize(chunk, voice, options, seed=SEED, index=0)
    # The draws synthesize made from the seed, made again the same way.
    redraw = ChunkDraws.from_seed(SEED, 0)
    uniforms = np.stack([redraw.uniforms(s) for s in range(result.t3.steps)])
    hift_draws = host_hift.draw_source_noise(result.hift.source.shape[-1], SEED * 1000)
    assert np.array_equal(
        host_hift.harmonic_source(tables["hift"], result.hift.f0, hift_draws), result.hift.source
    )
    steps = _write_recording(root, pipeline.session.calls)
    flow = result.flow
    np.savez(
        root / "results.npz",
        uniforms=uniforms,
        noise=flow.xs[0],
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
        spks=speaker_projection(tables["flow"], voice.xvector),
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
