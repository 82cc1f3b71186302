"""The cloned-voice rung: the voice file `voxport voice` writes, read back from disk, against
the publisher's conditionals computed in memory by its own `prepare_conditionals`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from conversion.s3gen.gate_rungs import cos as _cos
from gates.ladder import Measured, Rung

from .case import Case

REF_SECONDS = 2.0
REF_RATE = 16_000  # the cloned case's reference is written (and resampled from) 16 kHz
COS_VOICE = 0.9999  # voxport's clone vs the publisher's prepare_conditionals, every array


def publisher_conditionals(model, ref_wav: Path, exaggeration: float) -> dict[str, np.ndarray]:
    """The publisher's cloning in memory: `ChatterboxTTS.prepare_conditionals` on `ref_wav`,
    its `Conditionals` read field by field, and T3's conditioning as `generate` makes it
    (`t3.prepare_conditioning` on its T3Cond). `model.conds` is left as it was."""
    import copy

    import torch

    saved = model.conds
    try:
        model.prepare_conditionals(str(ref_wav), exaggeration=exaggeration)
        conds = model.conds
    finally:
        model.conds = saved
    with torch.no_grad():
        cond_emb = model.t3.prepare_conditioning(copy.copy(conds.t3))

    def arr(t) -> np.ndarray:
        return t.detach().cpu().numpy().copy()

    return {
        "cond_emb": arr(cond_emb),
        "t3_speaker_emb": arr(conds.t3.speaker_emb).reshape(1, -1),
        "t3_prompt_tokens": arr(conds.t3.cond_prompt_speech_tokens).reshape(1, -1),
        "prompt_tokens": np.rint(arr(conds.gen["prompt_token"])).reshape(1, -1),
        "prompt_feat": arr(conds.gen["prompt_feat"]),
        "xvector": arr(conds.gen["embedding"]).reshape(1, -1),
        "exaggeration": np.float32(exaggeration),
    }


def voice_rung(case: Case) -> Rung:
    """The cloned voice as a host reads it (the file `voxport voice` writes, loaded from disk:
    made afresh inside the rung by `case.clone`, else `case.voice`) vs the publisher's
    conditionals computed in memory by its own `prepare_conditionals` (`case.publisher`): the
    prompt tokens equal (else 0), and the worst cosine over T3's conditioning (the host's
    `cond_emb` at the publisher's exaggeration vs `t3.prepare_conditioning`), the speaker
    embedding, the prompt mel and the x-vector. Made inside the rung, the file is the port as
    it is when the rung runs: a fault in the writer or the reader reaches it."""
    pub = case.publisher

    def compare() -> Measured:
        if pub is None:
            raise ValueError(f"case {case.name!r} has no publisher conditionals to compare")
        voice = case.clone() if case.clone is not None else case.voice
        exaggeration = float(pub["exaggeration"])
        pairs = {
            "cond_emb": (pub["cond_emb"], voice.cond_emb(exaggeration)),
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
        worst = {k: _cos(a, b) for k, (a, b) in pairs.items()}
        name = min(worst, key=worst.get)
        note = (
            f"voice file read from disk vs the publisher's prepare_conditionals: prompt "
            f"{voice.prompt_token_len} tokens equal, T3 prompt {voice.t3_prompt_tokens.shape[1]} "
            f"equal; worst {name}"
        )
        return Measured(worst[name], note)

    return Rung(f"voice[{case.name}].conds", "min_cosine", COS_VOICE, compare, True)
