"""Random Chatterbox Turbo weights that behave like trained ones where a gate needs it.

The publisher's constructors give a T3 whose speech head is near-uniform over 6563 ids (top-p
never cuts, the stop token is never drawn: the loop runs its 1001 draws) and a mean-flow
estimator whose `r` input does nothing (`get_intmeanflow_time_mixer` is initialised to pass the
`t` embedding through and drop the `r` one). `calibrate_t3` and `calibrate_time_mixer` set a few
layers from the seed and the statistics below, stated up front, never fitted to a gate's outputs.

T3 (Chatterbox's calibration, moved to GPT-2's positions)
* the speech head's rows drawn N(0, LOGIT_STD^2 / d): a unit-RMS hidden state (GPT-2's final
  LayerNorm) gives logits of std LOGIT_STD (peaked: top-p 0.95 cuts);
* each speech row leaning toward its own token's input embedding (`STICKY`), so the token just
  drawn is favoured at the next step, as in a trained speech-token LM: what the repetition
  penalty damps, so its place in the processor order shows in the tokens;
* the rows (and biases) of the ids past the speech vocabulary (start-of-speech) zero;
* a length prior for the stop token. Turbo's T3 has no speech position table: GPT-2's learned
  positions (`wpe`) count over the whole sequence (speaker row, voice prompt, text, speech). Its
  rows carry a ramp along one seeded unit direction u and the stop row reads u, so the stop
  logit rises with the position and ties the typical top logit at `stop_position(config)`: the
  longest prefill (`TurboConfig.t3_prefix_max`) plus `STOP_STEPS`. A shorter text stops later
  in speech tokens, never past the budget.

Mean-flow estimator
* the time mixer's `r` half drawn N(0, R_GAIN^2 / dims) (its `t` half stays the publisher's
  identity), so the step's end time moves the velocity as a trained mixer's does.

HiFT: Chatterbox's calibration, shared (`conversion.s3gen.calibration.calibrate_hift`: voiced
f0, a spectrogram that depends on the mel), applied by `weights.random_snapshot`.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from .config import TurboConfig

# bumped when the calibration (or the snapshot it writes) changes: a cached random snapshot of
# another version is rewritten
CALIBRATION = 3  # 2: HiFT calibrated; 3: the size marker holds the graph buckets TurboConfig gained
LOGIT_STD = 3.2
STICKY = 0.1  # each speech row's lean toward its own input embedding, in LOGIT_STD units
STOP_SLOPE = 0.5  # the stop logit's rise per position, in units of LOGIT_STD
STOP_STEPS = {"reduced": 8, "published": 30}  # past the longest prefill
TIE_LOGIT = 4.0  # the typical top logit of 6563 Gaussian logits, in units of LOGIT_STD
SPEECH_TOKENS, STOP_ROW = 6561, 6562
R_GAIN = 0.5


def stop_position(config: TurboConfig) -> int:
    """The GPT-2 position at which the stop logit ties the typical top logit."""
    return config.t3_prefix_max + STOP_STEPS[config.name]


@torch.no_grad()
def calibrate_t3(t3: Any, seed: int, config: TurboConfig) -> None:
    """Peaked speech logits, and a stop token whose logit rises with GPT-2's position."""
    gen = torch.Generator().manual_seed(seed + 21)
    head, bias = t3.speech_head.weight, t3.speech_head.bias  # [V, d], [V]
    d = head.shape[1]
    head.copy_(torch.randn(head.shape, generator=gen) * (LOGIT_STD / math.sqrt(d)))
    head[SPEECH_TOKENS:] = 0.0
    bias[SPEECH_TOKENS:] = 0.0
    emb = t3.speech_emb.weight[:SPEECH_TOKENS]
    head[:SPEECH_TOKENS] += STICKY * LOGIT_STD * emb / emb.norm(dim=1, keepdim=True)
    u = torch.randn(d, generator=gen)
    u /= u.norm()
    # stop logit = gain * (u . h) with h of unit RMS (|h| = sqrt(d)); rho = u . h / sqrt(d)
    gain = 2.0 * TIE_LOGIT * LOGIT_STD
    head[STOP_ROW] = gain * u / math.sqrt(d)
    table = t3.tfmr.wpe.weight  # [positions, d]
    k = torch.arange(table.shape[0], dtype=torch.float32)
    target = TIE_LOGIT * LOGIT_STD + STOP_SLOPE * LOGIT_STD * (k - stop_position(config))
    rho = (target / gain).clamp(-1.0, 1.5)  # the share of the row's RMS along u
    table.add_((rho * math.sqrt(d))[:, None] * u[None, :])


@torch.no_grad()
def calibrate_time_mixer(estimator: Any, seed: int) -> None:
    """The mean-flow time mixer reads `r` (the publisher's init ignores it)."""
    gen = torch.Generator().manual_seed(seed + 31)
    weight = estimator.time_embed_mixer.weight  # [dims, 2 dims]: t half, then r half
    dims = weight.shape[0]
    weight[:, dims:] = torch.randn(dims, dims, generator=gen) * (R_GAIN / math.sqrt(dims))
