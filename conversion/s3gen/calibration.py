"""S3Gen's HiFT vocoder made to behave like a trained one, from a seed: shared by every model
whose random weights carry S3Gen's vocoder (Chatterbox, Chatterbox Turbo).

The publisher's constructors give a vocoder whose paths are nearly inert: the f0 head
predicts <= 0.15 Hz (the harmonic source is never voiced), its upsamplers and `conv_post` are
drawn at std 0.01 (the spectrogram hardly depends on the mel: an all-zero mel scored magspec
0.9993 against the real one). A gate rung over such a vocoder cannot fail. `calibrate_hift`
sets a few layers from the seed and the statistics below, stated up front, never fitted to a
gate's outputs:

* every weight-normed trunk convolution (conv_pre, ups, resblocks, source resblocks) at
  weight-norm gain `TRUNK_GAIN` per output channel (He-like: unit-variance propagation),
  the f0 predictor's convolutions at gain 1;
* the f0 head (`classifier`) reads a seeded direction scaled so that on a seeded unit-normal
  mel its f0 has mean `F0_MEAN_HZ` and std `F0_STD_HZ` (adult speech: ~80-300 Hz), so the
  source is voiced (f0 > the publisher's 10 Hz threshold) and moves with the mel;
* `conv_post`'s log-magnitude rows scaled to std `LOGMAG_STD` nats around `LOGMAG_MEAN` on
  that same seeded mel (a trained vocoder's log-magnitudes span several nats).

`hift_stats` measures what these aim for on a mel (a model's calibration report prints it).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

TRUNK_GAIN = 1.0
F0_MEAN_HZ, F0_STD_HZ = 150.0, 40.0
VOICED_HZ = 10.0  # HiFTGenerator's nsf_voiced_threshold
LOGMAG_MEAN, LOGMAG_STD = -1.5, 1.5
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
