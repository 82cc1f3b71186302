"""The vocoder's harmonic source on the host: F0 -> sine excitation -> its STFT (``har``).

iSTFTNet's generator drives its noise branch with an hn-NSF source: F0 upsampled to audio
rate, a sum of 9 harmonics with random initial phases, noise, a learned 9 -> 1 mix and a
20-point STFT. It runs on the host because it needs random draws, ``stft`` and
``torch.angle`` (none convertible), and because its phase is a cumulative sum that grows to
~1e5 rad: any reordering of its float32 ops changes the sines. So the ops below are the
publisher's, in the publisher's order and precision (torch float32, eager), and with the
same draws the excitation is bit-identical; only the final STFT runs in float64 numpy
(``conversion.core.host.dsp``), ~1e-6 from torch's float32 FFT.

Random draws, in the order the publisher makes them during ``decoder.generator.m_source``
(``SineGen._f02sine``, ``SineGen.forward``, ``SourceModuleHnNSF.forward``):

* ``rand_ini`` [1, 9]: ``torch.rand``, initial phase per harmonic (column 0 is zeroed);
* ``sine_noise`` [1, 600L, 9]: ``torch.randn_like``, the additive noise per harmonic;
* ``source_noise`` [1, 600L, 1]: ``torch.randn_like``, the noise branch, which the
  generator drops: it is drawn only to keep a replay in step.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from conversion.core.host.dsp import hann_window, magnitude_phase, stft


@dataclass(frozen=True)
class SourceConfig:
    """Constants of the publisher's ``Generator.m_source`` and ``Generator.stft``."""

    sampling_rate: int = 24000  # hard-coded in the publisher's Generator
    upsample_scale: int = 300  # prod(upsample_rates) * gen_istft_hop_size
    harmonic_num: int = 8  # hard-coded: 9 sines (fundamental + 8 overtones)
    sine_amp: float = 0.1
    noise_std: float = 0.003
    voiced_threshold: float = 10.0  # Hz; hard-coded ("voiced_threshod=10")
    n_fft: int = 20  # gen_istft_n_fft
    hop: int = 5  # gen_istft_hop_size

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> SourceConfig:
        """From a Kokoro ``config.json`` dict (its ``istftnet`` section)."""
        ist = config["istftnet"]
        hop = int(ist["gen_istft_hop_size"])
        return cls(
            upsample_scale=math.prod(ist["upsample_rates"]) * hop,
            n_fft=int(ist["gen_istft_n_fft"]),
            hop=hop,
        )

    @property
    def harmonics(self) -> int:
        return self.harmonic_num + 1

    @property
    def bins(self) -> int:
        return self.n_fft // 2 + 1


PUBLISHED = SourceConfig()


def _f0_samples(F0: np.ndarray, cfg: SourceConfig) -> torch.Tensor:
    """F0 [1, N] at frame rate -> [1, N*scale, 1] at audio rate (nearest, as nn.Upsample)."""
    f0 = torch.from_numpy(np.ascontiguousarray(F0, dtype=np.float32)).reshape(1, -1)
    return f0.repeat_interleave(cfg.upsample_scale, dim=1)[:, :, None]


def _sines(fn: torch.Tensor, rand_ini: torch.Tensor, cfg: SourceConfig) -> torch.Tensor:
    """Sines of the harmonics fn [1, S, H], phase integrated at frame rate (SineGen's way:
    interpolate the per-sample phase increments down, cumsum, interpolate back up)."""
    rad = (fn / cfg.sampling_rate) % 1
    ini = rand_ini.clone()
    ini[:, 0] = 0  # the fundamental starts at phase 0
    rad[:, 0, :] = rad[:, 0, :] + ini
    down = F.interpolate(rad.transpose(1, 2), scale_factor=1 / cfg.upsample_scale, mode="linear")
    phase = torch.cumsum(down.transpose(1, 2), dim=1) * 2 * torch.pi
    up = F.interpolate(
        phase.transpose(1, 2) * cfg.upsample_scale, scale_factor=cfg.upsample_scale, mode="linear"
    )
    return torch.sin(up.transpose(1, 2))


@torch.no_grad()
def excitation(
    F0: np.ndarray,
    l_linear_weight: np.ndarray,
    l_linear_bias: np.ndarray,
    rand_ini: np.ndarray,
    sine_noise: np.ndarray,
    config: SourceConfig = PUBLISHED,
) -> np.ndarray:
    """The merged sine source float32 [1, N*scale] for F0 [1, N] (N = 2L frames): what the
    publisher's ``m_source`` returns first (``sine_merge``), flattened."""
    cfg = config
    f0 = _f0_samples(F0, cfg)
    orders = torch.tensor([[list(range(1, cfg.harmonics + 1))]], dtype=torch.float32)
    fn = f0 * orders
    ini = torch.from_numpy(np.ascontiguousarray(rand_ini, dtype=np.float32)).reshape(1, -1)
    noise_draw = torch.from_numpy(np.ascontiguousarray(sine_noise, dtype=np.float32))
    if ini.shape[1] != cfg.harmonics or tuple(noise_draw.shape) != tuple(fn.shape):
        raise ValueError(
            f"draws have shapes {list(ini.shape)} and {list(noise_draw.shape)}, expected "
            f"[1, {cfg.harmonics}] and {list(fn.shape)}: use draw_source_noise(frames)"
        )
    sine_waves = _sines(fn, ini, cfg) * cfg.sine_amp
    uv = (f0 > cfg.voiced_threshold).type(torch.float32)
    # Unvoiced samples get noise at the sines' scale; voiced ones a little noise.
    noise_amp = uv * cfg.noise_std + (1 - uv) * cfg.sine_amp / 3
    sine_waves = sine_waves * uv + noise_amp * noise_draw
    w = torch.from_numpy(np.asarray(l_linear_weight, dtype=np.float32).reshape(1, -1))
    b = torch.from_numpy(np.asarray(l_linear_bias, dtype=np.float32).reshape(1))
    merged = torch.tanh(F.linear(sine_waves, w, b))  # [1, S, 1]
    return merged[:, :, 0].numpy()


def source_spectrum(source: np.ndarray, config: SourceConfig = PUBLISHED) -> np.ndarray:
    """``cat([|STFT|, angle(STFT)], bins)`` float32 [1, 2*bins, S/hop + 1], as the
    publisher's ``TorchSTFT.transform`` (periodic Hann, centred, reflect-padded)."""
    # torch builds the window in float32; round it the same way before the float64 FFT.
    window = hann_window(config.n_fft).astype(np.float32)
    spec = stft(source, config.n_fft, config.hop, config.n_fft, window=window)
    mag, phase = magnitude_phase(spec)
    return np.concatenate([mag, phase], axis=1).astype(np.float32)


def harmonic_source(
    F0: np.ndarray,
    l_linear_weight: np.ndarray,
    l_linear_bias: np.ndarray,
    rand_ini: np.ndarray,
    sine_noise: np.ndarray,
    config: SourceConfig = PUBLISHED,
) -> np.ndarray:
    """``har`` float32 [1, 22, 120L + 1] for F0 [1, 2L], the vocoder's source input.

    ``l_linear_*`` are ``decoder.generator.m_source.l_linear``'s weight [1, 9] and bias [1];
    ``rand_ini`` [1, 9] and ``sine_noise`` [1, 600L, 9] are raw draws (see
    :func:`draw_source_noise`). Give F0's real frames only: computed on a padded F0, the
    phase interpolation at the last real frame would see the pad.
    """
    src = excitation(F0, l_linear_weight, l_linear_bias, rand_ini, sine_noise, config)
    return source_spectrum(src, config)


def draw_source_noise(
    frames: int, seed: int | torch.Generator = 0, config: SourceConfig = PUBLISHED
) -> dict[str, np.ndarray]:
    """The source's random draws for F0 of ``frames`` values (2L), in the publisher's
    order and shapes: ``rand_ini``, ``sine_noise``, ``source_noise`` (see module doc).

    They come from a torch generator in the same order, so for a model whose only draws
    are these (Kokoro in eval mode), ``torch.manual_seed(seed)`` before the publisher's
    forward makes it draw exactly these values.
    """
    gen = seed if isinstance(seed, torch.Generator) else torch.Generator().manual_seed(seed)
    samples = frames * config.upsample_scale
    rand_ini = torch.rand(1, config.harmonics, generator=gen)
    # The publisher's randn_like(sine_waves) inherits the layout of a transposed [1, 9, S]
    # tensor, and torch fills a non-contiguous tensor in memory order with its scalar
    # sampler (not the vectorised one): an identically laid-out tensor gets the same values.
    sine_noise = torch.empty(1, config.harmonics, samples).transpose(1, 2).normal_(generator=gen)
    source_noise = torch.randn(1, samples, 1, generator=gen)
    return {
        "rand_ini": rand_ini.numpy(),
        "sine_noise": np.ascontiguousarray(sine_noise.numpy()),
        "source_noise": source_noise.numpy(),
    }


def replay_keys(draws: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """:func:`draw_source_noise`'s dict keyed for ``oracles.replay.replay_random_draws``."""
    return {
        "rand/0": draws["rand_ini"],
        "randn_like/0": draws["sine_noise"],
        "randn_like/1": draws["source_noise"],
    }
