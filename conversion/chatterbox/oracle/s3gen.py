"""The oracle's S3Gen stage: the shared recording (`conversion.s3gen.oracle`: the flow encoder,
the CFM's every Euler step's estimator x, t and output, HiFT's f0, source, conv_post and wav)
plus the CFM decoder's inputs, HiFT's upsampled f0 and its sine waves, and its draws captured.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from conversion.s3gen.oracle import S3GenRecorder, run_s3gen
from oracles.hooks import to_numpy

if TYPE_CHECKING:
    from chatterbox.tts import ChatterboxTTS


class _ChatterboxRecorder(S3GenRecorder):
    """The shared recording plus the decoder's inputs and HiFT's sine source."""

    def on_decoder(self, _m: Any, _args: Any, kwargs: dict[str, Any]) -> None:
        for name, key in (("mu", "mu"), ("mask", "cfm_mask"), ("spks", "cfm_spks")):
            self.rec[key] = to_numpy(kwargs[name])
        self.rec["cfm_cond"] = to_numpy(kwargs["cond"])

    def install(self, stack: contextlib.ExitStack, s3: Any) -> Any:
        add = super().install(stack, s3)
        add(s3.flow.decoder, self.on_decoder, pre=True, kwargs=True)
        add(s3.mel2wav.f0_upsamp, self.put("f0_upsampled"))
        add(s3.mel2wav.m_source.l_sin_gen, self.put("sine_waves"))
        return add


def _run_s3gen(
    model: ChatterboxTTS, speech_tokens: torch.Tensor, ref_dict: dict, n_cfm_timesteps: int
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], np.ndarray, float]:
    """`S3Gen.inference` with hooks: (intermediates, draws, wav after trim_fade, seconds).
    `z` is the CFM's noise; the steps' t, x and velocity are `cfm_t` [S, 2], `cfm_x` and
    `cfm_velocity` [S, 2, 80, T2] (cond row, then uncond); the shared inputs `cfm_*_in` [2, ...]
    (row 1 zeroed for CFG; mask is in both)."""
    recorder = _ChatterboxRecorder(
        model.s3gen.flow.decoder.estimator, step_inputs=("t", "x"), noise={"z": "randn_like/0"}
    )
    return run_s3gen(model.s3gen, recorder, speech_tokens, ref_dict, n_cfm_timesteps)
