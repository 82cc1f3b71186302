"""The oracle's whole-utterance record: `record` runs generate()'s steps on one text (voice,
text, T3, S3Gen, watermark) and assembles the stages' records into one `oracles.Fixture`."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from oracles import Fixture

from ..config import N_CFM_TIMESTEPS, SAMPLE_RATE
from .s3gen import _run_s3gen
from .t3 import STOP_SPEECH, _run_t3, _speech_tokens_for_s3gen, _text_tokens

if TYPE_CHECKING:
    from chatterbox.tts_turbo import ChatterboxTurboTTS

PACKAGES = ("chatterbox-tts", "transformers", "librosa", "resemble-perth", "pyloudnorm")
ORDER = ("temperature", "top_k", "top_p", "repetition_penalty")  # inference_turbo's processors


def _conditionals(model: ChatterboxTurboTTS, ref_wav: Path | None) -> Any:
    """A copy of the conditionals the run uses (the publisher caches the prompt embedding on
    the T3Cond it is given): cloned from `ref_wav` by `prepare_conditionals`, else the default."""
    saved = model.conds
    try:
        if ref_wav is not None:
            model.prepare_conditionals(str(ref_wav))
        if model.conds is None:
            raise ValueError("the snapshot has no conds.pt: pass ref_wav (> 5 s)")
        return copy.deepcopy(model.conds)
    finally:
        model.conds = saved


@torch.no_grad()
def record(
    model: ChatterboxTurboTTS,
    text: str,
    *,
    seed: int = 0,
    temperature: float = 0.8,
    top_k: int = 1000,
    top_p: float = 0.95,
    repetition_penalty: float = 1.2,
    max_gen_len: int = 1000,
    ref_wav: Path | None = None,
    n_cfm_timesteps: int = N_CFM_TIMESTEPS,
) -> Fixture:
    """Run `ChatterboxTurboTTS.generate`'s steps on `text` and record everything (the package
    docstring). Defaults are generate()'s; `max_gen_len` is inference_turbo's (generate leaves
    it at 1000)."""
    conds = _conditionals(model, ref_wav)
    saved = model.conds
    model.conds = conds
    try:
        normalized, text_tokens = _text_tokens(model, text)
        t3 = _run_t3(
            model,
            text_tokens,
            seed=seed,
            temperature=temperature,
            top_k=top_k,
            top_p=top_p,
            repetition_penalty=repetition_penalty,
            max_gen_len=max_gen_len,
        )
        speech_tokens = _speech_tokens_for_s3gen(t3["returned"][0])
        torch.manual_seed(int(seed))  # S3Gen's draws: the mean-flow noise, HiFT's source
        s3, draws, wav, s3_seconds = _run_s3gen(model, speech_tokens, conds.gen, n_cfm_timesteps)
    finally:
        model.conds = saved
    final = model.watermarker.apply_watermark(wav[0], sample_rate=model.sr)
    tokens = t3["tokens"]
    return Fixture(
        model="chatterbox_turbo",
        seeds={"torch": int(seed), "t3_uniforms": int(seed)},
        inputs={
            "text": normalized,
            "text_raw": text,
            "text_tokens": text_tokens.numpy().astype(np.int64),
            "t3_speaker_emb": conds.t3.speaker_emb.numpy(),
            "t3_prompt_tokens": conds.t3.cond_prompt_speech_tokens.numpy().astype(np.int64),
            "prompt_tokens": conds.gen["prompt_token"].numpy().astype(np.int64),
            "prompt_feat": conds.gen["prompt_feat"].float().numpy(),
            "xvector": conds.gen["embedding"].numpy(),
        },
        intermediates={
            "t3_prefill_embeds": t3["prefill"],
            "t3_logits": t3["logits"],
            "t3_probs": t3["probs"],
            "t3_tokens": tokens,
            "speech_tokens": speech_tokens.numpy().astype(np.int64).reshape(1, -1),
            **s3,
        },
        draws={**draws, "t3_uniforms/0": t3["uniforms"]},
        outputs={
            "wav_unwatermarked": wav.astype(np.float32),
            "wav": np.asarray(final, np.float32).reshape(1, -1),
        },
        meta={
            "sample_rate": SAMPLE_RATE,
            "voice": Path(ref_wav).name if ref_wav is not None else "default (conds.pt)",
            "sampling": {
                "temperature": temperature,
                "top_k": top_k,
                "top_p": top_p,
                "repetition_penalty": repetition_penalty,
                "order": list(ORDER),
                "previous_tokens": "start-of-speech at the first draw, then the drawn tokens",
            },
            "max_gen_len": max_gen_len,
            "t3_steps": int(tokens.shape[1]),
            "stopped_on_eos": bool(tokens.shape[1] and tokens[0, -1] == STOP_SPEECH),
            "n_cfm_timesteps": n_cfm_timesteps,
            "watermarker": type(model.watermarker).__name__,
            "seconds": {"t3": round(t3["seconds"], 3), "s3gen": round(s3_seconds, 3)},
        },
        packages=dict.fromkeys(PACKAGES),
    )
