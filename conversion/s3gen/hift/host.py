"""S3Gen's HiFT vocoder on the host: the harmonic source, the STFTs, and the graph calls.

    mel [1,80,n] ─ pad to bucket F ─▶ hift_f0 ─▶ f0[:n] ─ harmonic_source ─▶ source [1,1,480n]
    source ─ stft (n_fft 16, hop 4, periodic Hann) ─▶ cat(real, imag) [1,18,120n+1] ─ pad ─▶
    hift_trunk(mel, source_stft, n) ─▶ magnitude, phase [:, :, :120n+1]
    ─ istft(min(magnitude, 100) * exp(i*phase)) ─▶ clamp(+-audio_limit) ─▶ wav [480n]

What the publisher does in `HiFTGenerator.inference` (`s3gen.py` then multiplies the first
40 ms by `trim_fade`; that is `apply_trim_fade`, left to the pipeline).

The harmonic source (`SineGen` + `SourceModuleHnNSF`) needs random draws, a float32 running
phase over up to ~600k samples, and `tanh(linear)`; it runs here in torch float32 eager with
the publisher's ops in the publisher's order, so with the same draws it is bit-identical.
The STFT/iSTFT run in float64 numpy (`conversion.core.host.dsp`), ~1e-7 from torch's.

Random draws, in the order the publisher makes them inside `mel2wav.m_source` (N = 480n):

* ``phase`` [1, 9, 1]: ``torch.rand`` (via ``Uniform(-pi, pi).sample``), the harmonics'
  initial phases before scaling (phase = -pi + rand * 2pi; the fundamental's is zeroed);
* ``sine_noise`` [1, 9, N]: ``torch.randn_like(sine_waves)``, the additive noise per harmonic;
* ``source_noise`` [1, N, 1]: ``torch.randn_like(uv)``, the noise branch, which the
  generator drops: drawn only so a replay stays in step.

Recorded by `oracles.recorder.capture_random_draws` around `mel2wav.inference` they are
``rand/0``, ``randn_like/0`` and ``randn_like/1``; around the whole `S3Gen.inference` the flow's
noise comes first (``randn_like/0``) and the vocoder's are the last ones (`replay_keys` /
`draws_from_recording` convert). Nothing else in the
vocoder draws, so ``torch.manual_seed(seed)`` before the publisher's call draws exactly what
`draw_source_noise(samples, seed)` returns.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from conversion.core.errors import BucketOverflowError
from conversion.core.host.buckets import Bucket, BucketTable, pad_to
from conversion.core.host.dsp import istft, stft

from ..sizes import MEL_HOP, SAMPLE_RATE
from .graphs import (
    BUCKET_DIM,
    F0_FUNCTION,
    F0_GRAPH,
    TRUNK_FUNCTION,
    TRUNK_GRAPH,
    function_name,
    hift_of,
)

MAGNITUDE_CLIP = 1e2  # HiFTGenerator._istft: torch.clip(magnitude, max=1e2)
DRAW_NAMES = ("phase", "sine_noise", "source_noise")
_RECORDED = {"phase": "rand/0", "sine_noise": "randn_like/0", "source_noise": "randn_like/1"}


@dataclass
class HiftResult:
    wav: np.ndarray  # float32 [480 n], clamped, before trim_fade
    f0: np.ndarray  # float32 [n], Hz
    source: np.ndarray  # float32 [1, 1, 480 n], the merged harmonic source


def hift_host_arrays(model: Any) -> dict[str, np.ndarray]:
    """What the host needs from the publisher's vocoder (a ChatterboxTTS, an S3Gen or the
    HiFTGenerator): the source's linear merge, its constants, the STFT window and geometry,
    the output clamp, and the pipeline's trim_fade when the model has it."""
    hift = hift_of(model)
    src = hift.m_source
    gen = src.l_sin_gen
    upsample = hift.f0_upsamp.scale_factor
    arrays = {
        "l_linear_weight": src.l_linear.weight.detach().numpy().astype(np.float32).copy(),
        "l_linear_bias": src.l_linear.bias.detach().numpy().astype(np.float32).copy(),
        "stft_window": hift.stft_window.detach().numpy().astype(np.float32).copy(),
        "n_fft": np.array(hift.istft_params["n_fft"], np.int64),
        "hop": np.array(hift.istft_params["hop_len"], np.int64),
        "upsample": np.array(int(upsample), np.int64),
        "harmonics": np.array(gen.harmonic_num + 1, np.int64),
        "sampling_rate": np.array(gen.sampling_rate, np.int64),
        "sine_amp": np.array(gen.sine_amp, np.float64),
        "noise_std": np.array(gen.noise_std, np.float64),
        "voiced_threshold": np.array(gen.voiced_threshold, np.float64),
        "audio_limit": np.array(hift.audio_limit, np.float64),
    }
    if int(arrays["upsample"]) != MEL_HOP:
        raise ValueError(f"HiFT upsamples f0 by {upsample}, expected {MEL_HOP}")
    s3gen = getattr(model, "s3gen", model)
    if hasattr(s3gen, "trim_fade"):
        arrays["trim_fade"] = s3gen.trim_fade.detach().numpy().astype(np.float32).copy()
    return arrays


# ----------------------------------------------------------------------------- draws


def draw_source_noise(
    samples: int, seed: int | torch.Generator = 0, harmonics: int = 9
) -> dict[str, np.ndarray]:
    """The source's draws for `samples` audio samples, in the publisher's order and shapes."""
    gen = seed if isinstance(seed, torch.Generator) else torch.Generator().manual_seed(seed)
    phase = torch.rand(1, harmonics, 1, generator=gen)
    sine_noise = torch.randn(1, harmonics, samples, generator=gen)
    source_noise = torch.randn(1, samples, 1, generator=gen)
    return {
        "phase": phase.numpy(),
        "sine_noise": sine_noise.numpy(),
        "source_noise": source_noise.numpy(),
    }


def replay_keys(draws: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """`draw_source_noise`'s dict keyed for `oracles.replay.replay_random_draws`."""
    return {_RECORDED[k]: np.asarray(draws[k]) for k in DRAW_NAMES}


def draws_from_recording(recorded: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """The source's draws out of `capture_random_draws` keys (a leading ``draws/``, as in a
    fixture, is accepted): the last ``rand`` and the last two ``randn_like`` calls, since the
    vocoder draws last in `S3Gen.inference` (a recording around the whole S3Gen also holds
    the flow's ``randn_like/0`` noise; around `mel2wav.inference` alone they are ``rand/0``,
    ``randn_like/0``, ``randn_like/1``). Shapes are checked by `harmonic_source`."""
    bare = {str(k).removeprefix("draws/"): v for k, v in recorded.items()}

    def last(name: str, back: int) -> str:
        count = sum(1 for k in bare if k.rpartition("/")[0] == name)
        if count < back:
            raise KeyError(
                f"recorded draws have {count} '{name}' call(s), the vocoder makes "
                f"{back}: was the recording around the vocoder? (have {sorted(bare)})"
            )
        return f"{name}/{count - back}"

    keys = {"phase": last("rand", 1), "sine_noise": last("randn_like", 2)}
    keys["source_noise"] = last("randn_like", 1)
    out = {}
    for name, key in keys.items():
        v = bare[key]
        out[name] = v.detach().cpu().numpy() if hasattr(v, "detach") else np.asarray(v)
    return out


# ----------------------------------------------------------------------------- source


def _as_f32(a: Any) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(np.asarray(a, dtype=np.float32)))


@torch.no_grad()
def harmonic_source(
    arrays: Mapping[str, np.ndarray],
    f0: np.ndarray,
    draws: Mapping[str, np.ndarray] | None = None,
    seed: int | torch.Generator = 0,
) -> np.ndarray:
    """The merged hn-NSF source float32 [1, 1, 480n] for f0 [n] (Hz, real frames only):
    `f0_upsamp` + `m_source` of the publisher. `draws` are `draw_source_noise`'s names or
    recorded keys (``rand/0`` ...); without them they are drawn from `seed`."""
    f0_t = _as_f32(f0).reshape(1, 1, -1)
    up = int(arrays["upsample"])
    harmonics = int(arrays["harmonics"])
    samples = f0_t.shape[-1] * up
    if draws is None:
        draws = draw_source_noise(samples, seed, harmonics)
    elif "phase" not in draws:
        draws = draws_from_recording(draws)
    rand = _as_f32(draws["phase"])
    sine_draw = _as_f32(draws["sine_noise"])
    if tuple(rand.shape) != (1, harmonics, 1) or tuple(sine_draw.shape) != (1, harmonics, samples):
        raise ValueError(
            f"source draws have shapes {list(rand.shape)} and {list(sine_draw.shape)}, "
            f"expected [1, {harmonics}, 1] and [1, {harmonics}, {samples}] for {f0_t.shape[-1]} "
            "frames: use draw_source_noise(480 * frames)"
        )
    sr = int(arrays["sampling_rate"])
    sine_amp = float(arrays["sine_amp"])
    noise_std = float(arrays["noise_std"])
    # nn.Upsample(scale_factor=480, mode="nearest") == repeat (checked to 1,200 frames).
    x = f0_t.repeat_interleave(up, dim=-1)  # [1, 1, N]
    # SineGen.forward, op for op.
    f_mat = torch.zeros(1, harmonics, samples)
    for i in range(harmonics):
        f_mat[:, i : i + 1, :] = x * (i + 1) / sr
    theta = 2 * np.pi * (torch.cumsum(f_mat, dim=-1) % 1)
    low, high = torch.tensor(-np.pi), torch.tensor(np.pi)  # Uniform(-pi, pi), float32
    phase_vec = low + rand * (high - low)
    phase_vec[:, 0, :] = 0
    sine_waves = sine_amp * torch.sin(theta + phase_vec)
    uv = (x > float(arrays["voiced_threshold"])).type(torch.float32)
    noise_amp = uv * noise_std + (1 - uv) * sine_amp / 3
    sine_waves = sine_waves * uv + noise_amp * sine_draw
    # SourceModuleHnNSF.forward: linear over the harmonics (on the transposed view), tanh.
    w = _as_f32(arrays["l_linear_weight"]).reshape(1, harmonics)
    b = _as_f32(arrays["l_linear_bias"]).reshape(1)
    merged = torch.tanh(F.linear(sine_waves.transpose(1, 2), w, b))  # [1, N, 1]
    return merged.transpose(1, 2).contiguous().numpy()


def source_stft(arrays: Mapping[str, np.ndarray], source: np.ndarray) -> np.ndarray:
    """`HiFTGenerator._stft` + cat: float32 [1, 2*bins, N/hop + 1] = cat(real, imag)."""
    n_fft, hop = int(arrays["n_fft"]), int(arrays["hop"])
    sig = np.asarray(source, np.float32).reshape(1, -1)
    spec = stft(sig, n_fft, hop, n_fft, window=arrays["stft_window"])
    return np.concatenate([spec.real, spec.imag], axis=1).astype(np.float32)


def inverse_stft(
    arrays: Mapping[str, np.ndarray], magnitude: np.ndarray, phase: np.ndarray
) -> np.ndarray:
    """`HiFTGenerator._istft` + the clamp: float32 [(frames - 1) * hop] from the trunk's
    magnitude and phase [1, bins, frames]."""
    n_fft, hop = int(arrays["n_fft"]), int(arrays["hop"])
    mag = np.minimum(np.asarray(magnitude, np.float32), np.float32(MAGNITUDE_CLIP))
    ph = np.asarray(phase, np.float32)
    spec = mag.astype(np.float64) * np.cos(ph) + 1j * (mag.astype(np.float64) * np.sin(ph))
    wav = istft(spec, n_fft, hop, n_fft, window=arrays["stft_window"])
    limit = float(arrays["audio_limit"])
    return np.clip(wav, -limit, limit).astype(np.float32).reshape(-1)


def apply_trim_fade(wav: np.ndarray, fade: np.ndarray | None = None) -> np.ndarray:
    """S3Token2Wav's ad-hoc fade-in: the first 20 ms silenced, the next 20 ms raised by a
    half cosine (`trim_fade`, 960 samples at 24 kHz). Returns a new float32 array; a wav
    shorter than the fade is faded over its length (the publisher would raise there)."""
    if fade is None:
        n_trim = SAMPLE_RATE // 50
        t = torch.zeros(2 * n_trim)
        t[n_trim:] = (torch.cos(torch.linspace(torch.pi, 0, n_trim)) + 1) / 2
        fade = t.numpy()
    out = np.array(wav, dtype=np.float32, copy=True)
    flat = out.reshape(-1) if out.ndim == 1 else out.reshape(out.shape[0], -1)
    n = min(flat.shape[-1], fade.shape[0])
    flat[..., :n] *= np.asarray(fade, np.float32)[:n]
    return out


# ----------------------------------------------------------------------------- vocode


def vocoder_buckets(session: Any) -> BucketTable:
    """The mel-frame buckets the bundle's HiFT graphs were exported at."""
    meta = session.manifest.graphs[TRUNK_GRAPH].get("meta", {})
    return BucketTable(meta["buckets"])


def select_bucket(session: Any, frames: int) -> int:
    table = vocoder_buckets(session)
    try:
        return table.select(**{BUCKET_DIM: frames})[BUCKET_DIM]
    except BucketOverflowError as err:
        largest = table.limits()[BUCKET_DIM]
        raise BucketOverflowError(
            f"the vocoder got {frames} mel frames ({frames * MEL_HOP / SAMPLE_RATE:.2f} s) but "
            f"its largest bucket holds {largest} ({largest * MEL_HOP / SAMPLE_RATE:.2f} s): "
            "split the speech into shorter chunks or export a larger vocoder bucket"
        ) from err


def vocode(
    session: Any,
    arrays: Mapping[str, np.ndarray],
    mel: np.ndarray,
    draws: Mapping[str, np.ndarray] | None = None,
    seed: int | torch.Generator = 0,
    bucket: int | None = None,
) -> HiftResult:
    """mel [1, 80, n] -> HiftResult(wav [480 n], f0 [n], source) through the bundle's
    `hift_f0` and `hift_trunk` graphs at the smallest bucket >= n (or `bucket`)."""
    mel = np.asarray(mel, np.float32)
    if mel.ndim == 2:
        mel = mel[None]
    if mel.ndim != 3 or mel.shape[0] != 1:
        raise ValueError(f"mel must be [1, 80, frames], got {list(mel.shape)}")
    frames = int(mel.shape[-1])
    size = select_bucket(session, frames) if bucket is None else int(bucket)
    if size < frames:
        raise BucketOverflowError(f"{frames} mel frames do not fit the {size}-frame bucket")
    n_frames = np.array([frames], np.int32)
    mel_p = pad_to(mel, size, axis=-1)
    label = Bucket({BUCKET_DIM: size})
    f0_fn = function_name(F0_FUNCTION, label)
    f0 = session.run(F0_GRAPH, f0_fn, {"mel": mel_p, "n_frames": n_frames})["f0"]
    f0 = np.asarray(f0, np.float32).reshape(-1)[:frames]
    source = harmonic_source(arrays, f0, draws, seed)
    s_stft = source_stft(arrays, source)
    real_stft = s_stft.shape[-1]
    hop_frames = int(arrays["upsample"]) // int(arrays["hop"])
    s_stft = pad_to(s_stft, size * hop_frames + 1, axis=-1)
    trunk_fn = function_name(TRUNK_FUNCTION, label)
    out = session.run(
        TRUNK_GRAPH, trunk_fn, {"mel": mel_p, "source_stft": s_stft, "n_frames": n_frames}
    )
    magnitude = out["magnitude"][..., :real_stft]
    phase = out["phase"][..., :real_stft]
    wav = inverse_stft(arrays, magnitude, phase)[: frames * MEL_HOP]
    return HiftResult(wav=wav, f0=f0, source=source)
