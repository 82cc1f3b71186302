"""The oracle's S3Gen stage: the shared recording (`conversion.s3gen.oracle`) of
`S3Gen.inference` (mean-flow, 2 steps): the flow encoder, each step's estimator x, t, r and
output, HiFT's f0, source, conv_post and wav, and its random draws."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch

from conversion.s3gen.oracle import S3GenRecorder, run_s3gen

if TYPE_CHECKING:
    from chatterbox.tts_turbo import ChatterboxTurboTTS

# flow_inference's noise over the generated frames (`randn`), then the CFM's own `randn_like`
# over prompt + generated, whose generated part the noise replaces
NOISE = {"meanflow_noise": "randn/0", "cfm_z_drawn": "randn_like/0"}


def _run_s3gen(
    model: ChatterboxTurboTTS, speech_tokens: torch.Tensor, ref_dict: dict, n_cfm_timesteps: int
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], np.ndarray, float]:
    """`S3Gen.inference` with hooks: (intermediates, draws, wav after trim_fade, seconds);
    the steps' `cfm_t`, `cfm_r` [S, 1], `cfm_x` and `cfm_velocity` [S, ...]."""
    recorder = S3GenRecorder(
        model.s3gen.flow.decoder.estimator, step_inputs=("t", "r", "x"), noise=NOISE
    )
    return run_s3gen(model.s3gen, recorder, speech_tokens, ref_dict, n_cfm_timesteps)
