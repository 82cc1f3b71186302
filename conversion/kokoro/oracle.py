"""The publisher's `kokoro.KModel` as the oracle: one utterance, every intermediate recorded.

Records what the gate ladder compares rung by rung: ids, ref_s, the durations before
rounding, pred_dur, d (the duration encoder), t_en (the text encoder), the alignment, the
decoder's inputs asr / F0 / N, the harmonic source and its STFT (`har`), every random draw
(SineGen's initial phases and noise, the source module's noise) and the waveform. Hooks only:
the publisher's code runs unmodified.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

import numpy as np
import torch

from oracles import Fixture, Recorder, capture_random_draws

from .alignment import alignment_matrix

RECORDED_MODULES = (
    "predictor.text_encoder",  # d [1, T, 640]
    "predictor.duration_proj",  # logits behind the durations [1, T, max_dur]
    "text_encoder",  # t_en [1, 512, T]
    "decoder.generator.m_source",  # (sine_merge, noise, uv) at 24 kHz
)
PACKAGES = ("kokoro", "misaki", "transformers")


def _pre_hook(store: dict[str, Any], names: tuple[str, ...]):
    def hook(_module: torch.nn.Module, args: tuple) -> None:
        for name, value in zip(names, args, strict=False):
            store[name] = value.detach().clone().numpy()

    return hook


@torch.no_grad()
def record(
    kmodel: torch.nn.Module,
    ids: list[int],
    ref_s: np.ndarray,
    speed: float = 1.0,
    seed: int = 0,
    text: str = "",
    phonemes: str = "",
) -> Fixture:
    """Run `kmodel.forward_with_tokens` on `ids` (pads included) and record everything."""
    torch.manual_seed(seed)
    input_ids = torch.tensor([ids], dtype=torch.long)
    style = torch.as_tensor(np.asarray(ref_s, np.float32).reshape(1, -1))
    seen: dict[str, Any] = {}
    gen = kmodel.decoder.generator
    with ExitStack() as stack:
        stack.callback(
            kmodel.decoder.register_forward_pre_hook(
                _pre_hook(seen, ("asr", "F0", "N", "s"))
            ).remove
        )
        stack.callback(
            gen.noise_convs[0].register_forward_pre_hook(_pre_hook(seen, ("har",))).remove
        )
        rec = stack.enter_context(Recorder(kmodel, paths=list(RECORDED_MODULES)))
        draws = stack.enter_context(capture_random_draws())
        audio, pred_dur = kmodel.forward_with_tokens(input_ids, style, speed)
    inter = rec.intermediates
    logits = inter["predictor.duration_proj"]
    duration = (1.0 / (1.0 + np.exp(-logits.astype(np.float64)))).sum(-1) / speed
    pred_dur = pred_dur.reshape(-1).numpy().astype(np.int64)
    return Fixture(
        model="kokoro",
        seeds={"torch": seed},
        inputs={
            "ids": np.asarray([ids], np.int32),
            "ref_s": style.numpy(),
            "speed": np.asarray(speed, np.float32),
        },
        intermediates={
            "duration": duration.astype(np.float32),
            "pred_dur": pred_dur,
            "d": inter["predictor.text_encoder"],
            "t_en": inter["text_encoder"],
            "aln": alignment_matrix(pred_dur),
            "asr": seen["asr"],
            "F0": seen["F0"],
            "N": seen["N"],
            "har": seen["har"],
            "sine_merge": inter["decoder.generator.m_source.0"],
        },
        draws=dict(draws),
        outputs={"audio": audio.reshape(-1).numpy()},
        meta={"text": text, "phonemes": phonemes, "sample_rate": 24000},
    )
