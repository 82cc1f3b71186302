"""The oracle's whole-utterance records: `record` (voice, T3, S3Gen, watermark on one text) and
`record_flow_and_vocoder` (S3Gen alone on given tokens), each assembled into an
`oracles.Fixture` from the stage recorders (t3.py, s3gen.py).
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from oracles import Fixture

from ..config import SAMPLE_RATE
from ..voice import Voice, check_exaggeration, inspect_reference
from .recording import PACKAGES, SPEECH_VOCAB, START_SPEECH, STOP_SPEECH, _swapped_conds
from .s3gen import _run_s3gen
from .t3 import (
    _check_cfg_weight,
    _forced_path,
    _nonempty,
    _run_t3,
    _speech_tokens_for_s3gen,
    _text_tokens,
    _update_exaggeration,
)

if TYPE_CHECKING:
    from chatterbox.tts import ChatterboxTTS


def _voice_inputs(voice: Voice, exaggeration: float) -> dict[str, np.ndarray]:
    return {
        "t3_speaker_emb": voice.t3_speaker_emb,
        "t3_prompt_tokens": voice.t3_prompt_tokens.astype(np.int64),
        "exaggeration": np.asarray(exaggeration, np.float32),
        "prompt_tokens": voice.prompt_tokens.astype(np.int64),
        "prompt_feat": voice.prompt_feat,
        "xvector": voice.xvector,
    }


def _choose_voice(
    model: ChatterboxTTS, ref_wav: Path | None, voice: Voice | None, exaggeration: float
) -> tuple[Voice, Any]:
    """(the voice as recorded, the publisher's `Conditionals` the run uses).

    `ref_wav`: cloned by the publisher's own `prepare_conditionals` and run on exactly the
    conditionals it made (the Voice only records them); else `voice` or the model's default,
    run on `Voice.to_conditionals()`.
    """
    if ref_wav is not None:
        info = inspect_reference(ref_wav, prompt_seconds=model.DEC_COND_LEN / SAMPLE_RATE)
        saved = model.conds
        try:
            model.prepare_conditionals(str(ref_wav), exaggeration=exaggeration)
            conds = model.conds
        finally:
            model.conds = saved
        recorded = Voice.from_conditionals(
            model, conds, source=Path(ref_wav).name, notes=info.notes
        )
        return recorded, conds
    voice = Voice.from_conditionals(model) if voice is None else voice
    return voice, voice.to_conditionals()


def _record_intermediates(
    t3: dict[str, Any], speech_tokens: torch.Tensor, s3: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    return {
        "cond_emb": t3["cond_emb"],
        "t3_prefill_embeds": t3["prefill"],
        "t3_cond_logits": t3["cond_logits"],
        "t3_uncond_logits": t3["uncond_logits"],
        "t3_tokens": t3["tokens"],
        "speech_tokens": speech_tokens.numpy().astype(np.int64).reshape(1, -1),
        **s3,
    }


def _record_draws(t3: dict[str, Any], draws: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """S3Gen's captured draws, and T3's uniforms when it sampled (not when teacher-forced)."""
    all_draws = dict(draws)
    if t3["uniforms"] is not None:
        all_draws["t3_uniforms/0"] = t3["uniforms"]
    return all_draws


def _record_meta(
    model: ChatterboxTTS,
    voice: Voice,
    sampling: dict[str, float],
    t3: dict[str, Any],
    *,
    max_new_tokens: int,
    forced: bool,
    n_cfm_timesteps: int,
    s3_seconds: float,
) -> dict[str, Any]:
    tokens = t3["tokens"]
    return {
        "sample_rate": SAMPLE_RATE,
        "voice": voice.source,
        "voice_notes": list(voice.notes),
        "sampling": {
            **sampling,
            "order": "chatterbox",
            "previous_tokens_start": [START_SPEECH],
        },
        "max_new_tokens": max_new_tokens,
        "forced": forced,
        "t3_steps": int(tokens.shape[1]),
        "stopped_on_eos": bool(tokens.shape[1] and tokens[0, -1] == STOP_SPEECH),
        "n_cfm_timesteps": n_cfm_timesteps,
        "watermarker": type(model.watermarker).__name__,
        "seconds": {"t3": round(t3["seconds"], 3), "s3gen": round(s3_seconds, 3)},
        # The median decode step of the loop (transformer to speech head, the prefill left out).
        "t3_decode_step_ms": (
            round(statistics.median(t3["step_ms"][1:]), 3) if len(t3["step_ms"]) > 1 else None
        ),
    }


def _outputs(model: ChatterboxTTS, wav: np.ndarray) -> dict[str, np.ndarray]:
    """S3Gen's wav and the publisher's watermarked final wav."""
    final = model.watermarker.apply_watermark(wav[0], sample_rate=model.sr)
    return {
        "wav_unwatermarked": wav.astype(np.float32),
        "wav": np.asarray(final, np.float32).reshape(1, -1),
    }


# ---------------------------------------------------------------------------------------------
# public
# ---------------------------------------------------------------------------------------------


@torch.no_grad()
def record(
    model: ChatterboxTTS,
    text: str,
    *,
    seed: int = 0,
    exaggeration: float = 0.5,
    cfg_weight: float = 0.5,
    temperature: float = 0.8,
    repetition_penalty: float = 1.2,
    min_p: float = 0.05,
    top_p: float = 1.0,
    max_new_tokens: int = 1000,
    ref_wav: Path | None = None,
    forced_tokens: np.ndarray | None = None,
    n_cfm_timesteps: int = 10,
    voice: Voice | None = None,
) -> Fixture:
    """Run `ChatterboxTTS.generate`'s steps on `text` and record everything (package docstring).

    The voice: `ref_wav` (cloned by the publisher's `prepare_conditionals`, whose conditionals
    the run uses as they are), else `voice`, else the model's default (`model.conds`).
    Defaults are `generate`'s, except `max_new_tokens` (generate hard-codes 1000) and
    `n_cfm_timesteps` (S3Gen's default, 10).
    """
    exaggeration = check_exaggeration(exaggeration)
    _check_cfg_weight(cfg_weight)
    forced = _forced_path(model, forced_tokens)
    if forced is not None:
        max_new_tokens = int(forced.size)
    voice, conds = _choose_voice(model, ref_wav, voice, exaggeration)
    sampling = {
        "cfg_weight": cfg_weight,
        "temperature": temperature,
        "repetition_penalty": repetition_penalty,
        "min_p": min_p,
        "top_p": top_p,
    }
    with _swapped_conds(model, conds):
        _update_exaggeration(model, exaggeration)
        normalized, text_tokens = _text_tokens(model, text)
        torch.manual_seed(int(seed))
        t3 = _run_t3(
            model, text_tokens, seed=seed, max_new_tokens=max_new_tokens, forced=forced, **sampling
        )
        speech_tokens = _nonempty(_speech_tokens_for_s3gen(t3["tokens"]))
        s3, draws, wav, s3_seconds = _run_s3gen(
            model, speech_tokens, model.conds.gen, n_cfm_timesteps
        )
        outputs = _outputs(model, wav)
    return Fixture(
        model="chatterbox",
        seeds={"torch": int(seed), "t3_uniforms": int(seed)},
        inputs={
            "text": normalized,
            "text_raw": text,
            "text_tokens": text_tokens[:1].numpy().astype(np.int64),
            **_voice_inputs(voice, exaggeration),
        },
        intermediates=_record_intermediates(t3, speech_tokens, s3),
        draws=_record_draws(t3, draws),
        outputs=outputs,
        meta=_record_meta(
            model,
            voice,
            sampling,
            t3,
            max_new_tokens=max_new_tokens,
            forced=forced is not None,
            n_cfm_timesteps=n_cfm_timesteps,
            s3_seconds=s3_seconds,
        ),
        packages=dict.fromkeys(PACKAGES),
    )


@torch.no_grad()
def record_flow_and_vocoder(
    model: ChatterboxTTS,
    speech_tokens: np.ndarray,
    voice: Voice | None = None,
    seed: int = 0,
    n_cfm_timesteps: int = 10,
) -> Fixture:
    """`S3Gen.inference` alone on given speech tokens (ids < 6561), recorded as in `record`."""
    tokens = np.asarray(speech_tokens, dtype=np.int64).reshape(-1)
    if tokens.size == 0 or tokens.min() < 0 or tokens.max() >= SPEECH_VOCAB:
        raise ValueError(f"speech_tokens must be 1..n ids in [0, {SPEECH_VOCAB})")
    voice = Voice.from_conditionals(model) if voice is None else voice
    conds = voice.to_conditionals()
    with _swapped_conds(model, conds):
        torch.manual_seed(int(seed))
        s3, draws, wav, seconds = _run_s3gen(
            model, torch.from_numpy(tokens.copy()), model.conds.gen, n_cfm_timesteps
        )
        outputs = _outputs(model, wav)
    return Fixture(
        model="chatterbox",
        seeds={"torch": int(seed)},
        inputs={"speech_tokens": tokens.reshape(1, -1), **_voice_inputs(voice, voice.exaggeration)},
        intermediates=s3,
        draws=dict(draws),
        outputs=outputs,
        meta={
            "sample_rate": SAMPLE_RATE,
            "voice": voice.source,
            "n_cfm_timesteps": n_cfm_timesteps,
            "watermarker": type(model.watermarker).__name__,
            "seconds": {"s3gen": round(seconds, 3)},
        },
        packages=dict.fromkeys(PACKAGES),
    )
