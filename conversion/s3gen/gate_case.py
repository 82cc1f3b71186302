"""A gate case of the Chatterbox family (Chatterbox and Chatterbox Turbo share S3Gen and the
shape of their gates): the oracle's recorded fixture, the voice the bundle gets, voxport's text
chunk and, for a cloned voice, the publisher's conditionals and a maker of voxport's voice
file; the oracle's tokens the rungs read; and the cloned-voice rung, the voice file read back
from disk against the publisher's `prepare_conditionals` computed in memory; and the bundles a
gate runs on.
"""

from __future__ import annotations

import copy
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gates.ladder import Measured, Rung
from oracles import Fixture

from .gate_rungs import cos

REF_RATE = 16_000  # the cloned case's reference is written (and resampled from) 16 kHz
COS_VOICE = 0.9999  # voxport's clone vs the publisher's prepare_conditionals, every array


@dataclass
class Case:
    name: str
    fixture: Fixture
    voice: Any  # the model's voice (`Voice`, `TurboVoice`)
    chunk: Any | None  # voxport's text path (`text_chunk`), filled once the bundle exists
    # cloned: the publisher's conditionals, computed in memory by its prepare_conditionals
    publisher: dict[str, np.ndarray] | None = None
    # cloned: voxport's voice file made afresh from the same reference and read back
    # (`voice_file_maker`), so `voice_rung` compares a side a fault in the writer or the reader
    # moves; `voice` is one such file made when the case was
    clone: Callable[[], Any] | None = None


def oracle_tokens(fx: Fixture) -> np.ndarray:
    """Every token the publisher's T3 drew, a final stop token included."""
    return fx.intermediates["t3_tokens"].reshape(-1)


def speech_tokens(fx: Fixture) -> np.ndarray:
    """The tokens the oracle handed S3Gen (its T3 tokens after drop_invalid_tokens)."""
    return fx.intermediates["speech_tokens"].reshape(-1)


def gate_bundles(bundles: Any, config: Any, sizes: Any, side: bool = True) -> tuple[Path, Any]:
    """The fp32 bundle at the gate's `sizes` (a bundle of its own when they are not `config`'s:
    speak's stays whole) and, with `side`, its int8-T3 sibling (T3 only; else None)."""
    variant = None if sizes == config else "gate"
    fp32 = bundles.get(sizes, "fp32", variant=variant)
    if not side:
        return fp32, None
    return fp32, bundles.get(sizes, "int8", graphs=("t3",), variant=f"{variant or 'gate'}-t3")


def voice_file_maker(
    ref_wav: Path, write: Callable[[Path, Path], Path], load: Callable[[Path], Any], prefix: str
) -> Callable[[], Any]:
    """A function that writes the voice file `voxport voice` writes of `ref_wav` (its samples
    kept in memory, so the file may go) into a temp folder, by `write(wav, dest)`, and reads it
    back with `load(path)`, the host's reader: the port's clone as it is when called (`write`
    and `load` should look the port up when called, so a patched writer or reader is run)."""
    import soundfile as sf

    samples, rate = sf.read(ref_wav, dtype="float32")
    subtype = sf.info(str(ref_wav)).subtype  # rewritten as it was: the same decoded samples
    name = Path(ref_wav).name

    def clone() -> Any:
        with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
            wav = Path(tmp) / name
            sf.write(wav, samples, rate, subtype=subtype)
            return load(write(wav, Path(tmp) / "voice.npz"))

    return clone


def publisher_conditionals(model: Any, ref_wav: Path, **prepare: Any) -> dict[str, np.ndarray]:
    """The publisher's cloning in memory: `model.prepare_conditionals(ref_wav, **prepare)`, its
    `Conditionals` read field by field (tokens as float), and T3's conditioning as `generate`
    makes it (`t3.prepare_conditioning` on its T3Cond). `model.conds` is left as it was."""
    import torch

    saved = model.conds
    try:
        model.prepare_conditionals(str(ref_wav), **prepare)
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


def voice_rung(case: Case, cond_emb: Callable[[Any], np.ndarray]) -> Rung:
    """The cloned voice as a host reads it (the file voxport writes, loaded from disk: made
    afresh inside the rung by `case.clone`, else `case.voice`) vs the publisher's conditionals
    (`case.publisher`): the prompt tokens equal (else 0), and the worst cosine over T3's
    conditioning (`cond_emb(voice)`, the host's, vs `t3.prepare_conditioning`), the speaker
    embedding, the prompt mel and the x-vector. Made inside the rung, the file is the port as
    it is when the rung runs: a fault in the writer or the reader reaches it."""
    pub = case.publisher

    def compare() -> Measured:
        if pub is None:
            raise ValueError(f"case {case.name!r} has no publisher conditionals to compare")
        voice = case.clone() if case.clone is not None else case.voice
        pairs = {
            "cond_emb": (pub["cond_emb"], cond_emb(voice)),
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
            f"{voice.prompt_token_len} tokens equal, T3 prompt {voice.t3_prompt_tokens.shape[1]} "
            f"equal; worst {name}"
        )
        return Measured(worst[name], note)

    return Rung(f"voice[{case.name}].conds", "min_cosine", COS_VOICE, compare, True)
