"""The cloned-voice rung: the voice file `voxport voice chatterbox_turbo` writes, read back from
disk, against the publisher's conditionals computed in memory by its own `prepare_conditionals`.
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np

from conversion.s3gen.gate_rungs import cos
from gates.ladder import Measured, Rung

from ..t3 import host as host_t3
from .case import Case

REF_SECONDS = 6.0  # prepare_conditionals asserts a reference over 5 s
REF_RATE = 16_000  # the cloned case's reference is written (and resampled from) 16 kHz
COS_VOICE = 0.9999  # Chatterbox's bar: voxport's clone vs prepare_conditionals, every array


def publisher_conditionals(model, ref_wav: Path) -> dict[str, np.ndarray]:
    """The publisher's cloning in memory: `ChatterboxTurboTTS.prepare_conditionals` on
    `ref_wav`, its `Conditionals` read field by field, and T3's conditioning as
    `inference_turbo` makes it (`t3.prepare_conditioning` on its T3Cond). `model.conds` is left
    as it was."""
    import torch

    saved = model.conds
    try:
        model.prepare_conditionals(str(ref_wav))
        conds = model.conds
    finally:
        model.conds = saved
    with torch.no_grad():
        cond_emb = model.t3.prepare_conditioning(copy.copy(conds.t3))

    def arr(t) -> np.ndarray:
        return t.detach().float().cpu().numpy().copy()

    return {
        "cond_emb": arr(cond_emb),
        "t3_speaker_emb": arr(conds.t3.speaker_emb).reshape(1, -1),
        "t3_prompt_tokens": np.rint(arr(conds.t3.cond_prompt_speech_tokens)).reshape(1, -1),
        "prompt_tokens": np.rint(arr(conds.gen["prompt_token"])).reshape(1, -1),
        "prompt_feat": arr(conds.gen["prompt_feat"]),
        "xvector": arr(conds.gen["embedding"]).reshape(1, -1),
    }


def voice_rung(case: Case, t3_arrays: dict[str, np.ndarray]) -> Rung:
    """The cloned voice as a host reads it (the file voxport writes, loaded from disk: made
    afresh inside the rung by `case.clone`, else `case.voice`) vs the publisher's conditionals
    (`case.publisher`): the prompt tokens equal (else 0), and the worst cosine over T3's
    conditioning rows (the host's `cond_rows` over the bundle's tables vs
    `t3.prepare_conditioning`), the speaker embedding, the prompt mel and the x-vector."""
    pub = case.publisher

    def compare() -> Measured:
        if pub is None:
            raise ValueError(f"case {case.name!r} has no publisher conditionals to compare")
        voice = case.clone() if case.clone is not None else case.voice
        pairs = {
            "cond_emb": (pub["cond_emb"], host_t3.cond_rows(t3_arrays, voice.t3_cond())[None]),
            "t3_speaker_emb": (pub["t3_speaker_emb"], voice.t3_speaker_emb),
            "prompt_feat": (pub["prompt_feat"], voice.prompt_feat),
            "xvector": (pub["xvector"], voice.xvector),
        }
        shapes = {k: (a.shape, b.shape) for k, (a, b) in pairs.items() if a.shape != b.shape}
        tokens = {
            k: np.array_equal(pub[k], getattr(voice, k))
            for k in ("prompt_tokens", "t3_prompt_tokens")
        }
        if shapes or not all(tokens.values()):
            return Measured(0.0, f"tokens equal: {tokens}; shapes differ: {shapes}")
        worst = {k: cos(a, b) for k, (a, b) in pairs.items()}
        name = min(worst, key=worst.get)
        note = (
            f"voice file read from disk vs the publisher's prepare_conditionals: prompt "
            f"{voice.prompt_token_len} tokens equal, T3 prompt {voice.t3_prompt_len} equal; "
            f"worst {name}"
        )
        return Measured(worst[name], note)

    return Rung(f"voice[{case.name}].conds", "min_cosine", COS_VOICE, compare, True)
