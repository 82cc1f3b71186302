"""Random Chatterbox weights that behave like trained ones where a gate rung needs it.

The publisher's constructors give a model whose every path is nearly inert: HiFT's f0 head
predicts <= 0.15 Hz (the harmonic source is never voiced), its upsamplers and `conv_post` are
drawn at std 0.01 (the vocoder's spectrogram hardly depends on its mel: an all-zero mel scored
magspec 0.9993 against the real one), and T3's speech head gives near-uniform logits over 8194
ids (top-p and min-p never cut, the stop token is never drawn). A rung over such a model
cannot fail. `calibrate_hift` and `calibrate_t3` set a few layers from the seed and the
statistics below, stated up front, never fitted to the gate's outputs:

HiFT
* every weight-normed trunk convolution (conv_pre, ups, resblocks, source resblocks) at
  weight-norm gain `TRUNK_GAIN` per output channel (He-like: unit-variance propagation),
  the f0 predictor's convolutions at gain 1;
* the f0 head (`classifier`) reads a seeded direction scaled so that on a seeded unit-normal
  mel its f0 has mean `F0_MEAN_HZ` and std `F0_STD_HZ` (adult speech: ~80-300 Hz), so the
  source is voiced (f0 > the publisher's 10 Hz threshold) and moves with the mel;
* `conv_post`'s log-magnitude rows scaled to std `LOGMAG_STD` nats around `LOGMAG_MEAN` on
  that same seeded mel (a trained vocoder's log-magnitudes span several nats).

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

# bumped when the calibration changes: a cached random snapshot of another version is rewritten
CALIBRATION = 2
TRUNK_GAIN = 1.0
F0_MEAN_HZ, F0_STD_HZ = 150.0, 40.0
VOICED_HZ = 10.0  # HiFTGenerator's nsf_voiced_threshold
LOGMAG_MEAN, LOGMAG_STD = -1.5, 1.5
LOGIT_STD = 3.2
STICKY = 0.1  # each speech row's lean toward its own input embedding, in LOGIT_STD units
STOP_SLOPE = 0.5  # the stop logit's rise per speech position, in units of LOGIT_STD
STOP_STEP = {"reduced": 14, "published": 30}
TIE_LOGIT = 4.0  # the typical top logit of 8194 Gaussian logits, in units of LOGIT_STD
SPEECH_VOCAB, STOP_ROW = 6561, 6562
CALIBRATION_FRAMES = 400


def _weight_normed(module: torch.nn.Module):
    for name, sub in module.named_modules():
        parametrizations = getattr(sub, "parametrizations", None)
        if parametrizations is not None and "weight" in parametrizations:
            yield name, sub


def _set_gain(conv: torch.nn.Module, gain: float) -> None:
    """Weight norm: weight = g * v / |v|, per output channel; set g."""
    conv.parametrizations.weight.original0.fill_(gain)


@torch.no_grad()
def calibrate_hift(hift: Any, seed: int) -> None:
    """HiFT's f0 head voiced at speech-like f0, its spectrogram dependent on its mel."""
    gen = torch.Generator().manual_seed(seed + 11)
    for name, conv in _weight_normed(hift):
        if name.startswith("f0_predictor"):
            _set_gain(conv, 1.0)
        elif not name.startswith("conv_post"):
            _set_gain(conv, TRUNK_GAIN)
    mel = torch.randn(1, 80, CALIBRATION_FRAMES, generator=gen)
    head = hift.f0_predictor.classifier
    feats = hift.f0_predictor.condnet(mel).transpose(1, 2)[0]  # [T, C]
    direction = torch.randn(1, feats.shape[-1], generator=gen)
    centred = feats - feats.mean(0)
    scale = F0_STD_HZ / (centred @ direction.T).std()
    head.weight.copy_(direction * scale)
    head.bias.fill_(F0_MEAN_HZ - float(feats.mean(0) @ head.weight[0]))

    post = hift.conv_post
    _set_gain(post, 1.0)
    seen: dict[str, torch.Tensor] = {}
    hook = post.register_forward_hook(lambda _m, _a, out: seen.setdefault("out", out))
    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(seed + 12)  # the source's own draws; restored after
        hift.inference(mel)
    finally:
        hook.remove()
        torch.random.set_rng_state(state)
    bins = post.out_channels // 2  # n_fft/2 + 1 log-magnitude rows, then the phase rows
    out = seen["out"][0, :bins]
    k = LOGMAG_STD / float(out.std())
    post.parametrizations.weight.original0[:bins].mul_(k)
    # out' = (out - b) k + b: shift the bias so the rows' mean is LOGMAG_MEAN
    bias = post.bias[:bins]
    bias.add_(LOGMAG_MEAN - ((out.mean() - bias.mean()) * k + bias.mean()))


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


@torch.no_grad()
def hift_wav(model: Any, mel: np.ndarray, seed: int = 0) -> np.ndarray:
    """The publisher's HiFT on `mel` with its draws seeded (same draws for every mel)."""
    torch.manual_seed(seed)
    wav, _ = model.s3gen.mel2wav.inference(torch.from_numpy(np.ascontiguousarray(mel)))
    return wav.numpy().reshape(-1)


def hift_stats(model: Any, mel: np.ndarray) -> dict[str, Any]:
    """HiFT on `mel`: the f0 head's voiced share and range, and how far the vocoder's output
    moves when its mel is replaced (magspec corr vs its own output on `mel`, same draws)."""
    from gates.metrics import magnitude_spectrogram_corr

    with torch.no_grad():
        f0 = model.s3gen.mel2wav.f0_predictor(torch.from_numpy(mel)).numpy().reshape(-1)
    voiced = f0 > VOICED_HZ
    ref = hift_wav(model, mel)
    rng = np.random.default_rng(0)
    probes = {
        "zero": np.zeros_like(mel),
        "reversed": mel[..., ::-1].copy(),
        "noise": (rng.standard_normal(mel.shape) * mel.std()).astype(np.float32),
    }
    scores = {k: magnitude_spectrogram_corr(ref, hift_wav(model, v)) for k, v in probes.items()}
    return {
        "voiced_share": float(voiced.mean()),
        "f0_hz_min_max": [float(f0.min()), float(f0.max())],
        "f0_hz_p5_p95": [float(np.percentile(f0, 5)), float(np.percentile(f0, 95))],
        "magspec_vs_own_mel": {k: round(v, 4) for k, v in scores.items()},
    }


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
