"""Random Chatterbox weights that behave like trained ones where a gate rung needs it.

The publisher's constructors give a model whose every path is nearly inert: HiFT's f0 head
predicts <= 0.15 Hz (the harmonic source is never voiced), its upsamplers and `conv_post` are
drawn at std 0.01 (the vocoder's spectrogram hardly depends on its mel: an all-zero mel scored
magspec 0.9993 against the real one), and T3's speech head gives near-uniform logits over 8194
ids (top-p and min-p never cut, the stop token is never drawn). A rung over such a model
cannot fail. `calibrate_hift` and `calibrate_t3` set a few layers from the seed and the
statistics below, stated up front, never fitted to the gate's outputs:

HiFT: `conversion.s3gen.calibration.calibrate_hift` (shared with Chatterbox Turbo; its
statistics stated there).

T3
* the speech head's rows drawn N(0, LOGIT_STD^2 / d): a unit-RMS hidden state (T3's final
  RMSNorm) gives logits of std LOGIT_STD, which for 8194 ids at the publisher's temperature
  0.8 is ~3.5 nats of entropy and ~0.8 of the mass in the top 50 (a trained speech LM's
  distributions are peaked, not flat): top-p and min-p cut;
* each speech row leaning toward its own token's input embedding (`STICKY`), so the token just
  drawn is favoured at the next step: trained speech-token LMs repeat tokens (sustained
  sounds), which is what the repetition penalty damps;
* the rows of the ids past the speech vocabulary (start-of-speech, padding) zero, as a
  trained T3 never draws them;
* a length prior for the stop token: the speech position table carries a ramp along one
  seeded unit direction u, and the stop row reads u, so the stop logit rises with the speech
  position and ties the typical top logit near `STOP_STEP[config]` (a trained T3 stops once
  its text is spoken; here inside the gate's step budget).

`stats` measures what these aim for on a recorded run (printed by `python -m
conversion.chatterbox.calibration_report`, quoted on the card).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from conversion.s3gen.calibration import hift_stats

# bumped when the calibration changes: a cached random snapshot of another version is rewritten
CALIBRATION = 2
LOGIT_STD = 3.2
STICKY = 0.1  # each speech row's lean toward its own input embedding, in LOGIT_STD units
STOP_SLOPE = 0.5  # the stop logit's rise per speech position, in units of LOGIT_STD
STOP_STEP = {"reduced": 14, "published": 30}
TIE_LOGIT = 4.0  # the typical top logit of 8194 Gaussian logits, in units of LOGIT_STD
SPEECH_VOCAB, STOP_ROW = 6561, 6562


@torch.no_grad()
def calibrate_t3(t3: Any, seed: int, config_name: str) -> None:
    """Peaked speech logits, and a stop token whose logit rises with the speech position."""
    gen = torch.Generator().manual_seed(seed + 21)
    head = t3.speech_head.weight  # [V, d]
    d = head.shape[1]
    head.copy_(torch.randn(head.shape, generator=gen) * (LOGIT_STD / math.sqrt(d)))
    # ids past the 6561 speech tokens (start, stop, padding) are never drawn by a trained T3:
    # a zero row's logit 0 sits ~4 LOGIT_STD under the top one (min-p cuts it); stop is set below
    head[SPEECH_VOCAB:] = 0.0
    # the token just drawn is favoured at the next step (its input embedding is in the residual
    # stream the head reads), as in a trained speech-token LM, whose sequences repeat
    # (sustained sounds) and which the repetition penalty exists to damp
    emb = t3.speech_emb.weight[:SPEECH_VOCAB]
    head[:SPEECH_VOCAB] += STICKY * LOGIT_STD * emb / emb.norm(dim=1, keepdim=True)
    u = torch.randn(d, generator=gen)
    u /= u.norm()
    # the stop logit = gain * (u . h) with h of unit RMS, |h| = sqrt(d); rho_k = u . h / sqrt(d)
    gain = 2.0 * TIE_LOGIT * LOGIT_STD
    head[STOP_ROW] = gain * u / math.sqrt(d)
    table = t3.speech_pos_emb.emb.weight  # [positions, d]
    k = torch.arange(table.shape[0], dtype=torch.float32)
    target = TIE_LOGIT * LOGIT_STD + STOP_SLOPE * LOGIT_STD * (k - STOP_STEP[config_name])
    rho = (target / gain).clamp(-1.0, 1.5)  # the share of the row's RMS along u
    table.add_((rho * math.sqrt(d))[:, None] * u[None, :])


# ---------------------------------------------------------------------------------------------
# statistics
# ---------------------------------------------------------------------------------------------


def logit_stats(cond: np.ndarray, uncond: np.ndarray, cfg: float = 0.5, temp: float = 0.8):
    """Per step of the CFG-combined logits at `temp`: entropy (nats) and top-50 mass."""
    logits = (cond + cfg * (cond - uncond)).astype(np.float64) / temp
    logits -= logits.max(-1, keepdims=True)
    p = np.exp(logits)
    p /= p.sum(-1, keepdims=True)
    entropy = -(p * np.log(np.maximum(p, 1e-300))).sum(-1)
    top50 = np.sort(p, axis=-1)[:, -50:].sum(-1)
    return entropy, top50, p[:, STOP_ROW]


def t3_stats(fx: Any) -> dict[str, Any]:
    """The oracle's T3 run: entropy and top-50 mass of its draws' distributions, the stop."""
    it = fx.intermediates
    entropy, top50, p_stop = logit_stats(it["t3_cond_logits"], it["t3_uncond_logits"])
    return {
        "entropy_nats_median": round(float(np.median(entropy)), 3),
        "top50_mass_median": round(float(np.median(top50)), 3),
        "p_stop_max": round(float(p_stop.max()), 3),
        "t3_steps": int(it["t3_tokens"].size),
        "stopped_on_eos": bool(fx.meta["stopped_on_eos"]),
    }


def stats(model: Any, fx: Any) -> dict[str, Any]:
    """The calibration's statistics on a recorded oracle run `fx` (oracle.record)."""
    return {**hift_stats(model, fx.intermediates["mel"]), **t3_stats(fx)}
