"""What both models' snapshots are checked and made with, around the publisher's constructors:
the layout check, the environment they run in offline, the untrained-module perturbation, and
the synthetic reference a default voice is cloned from."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch

from conversion.core.errors import WeightsError

from .sizes import SAMPLE_RATE


def check_files(
    folder: Path, model: str, repo: str, required: tuple[str, ...], optional: str
) -> None:
    """Raise WeightsError naming the first of `required` missing from `folder` (a snapshot of
    the publisher's `repo`), or the folder itself."""
    folder = Path(folder)
    if not folder.is_dir():
        raise WeightsError(
            f"{model} weights folder {folder} does not exist; pass a local snapshot of "
            f"{repo} (--weights DIR) or --weights random"
        )
    for name in required:
        if not (folder / name).is_file():
            raise WeightsError(
                f"{model} weights: {folder / name} is missing (a snapshot needs "
                f"{', '.join(required)}, optionally {optional})"
            )


@contextlib.contextmanager
def publisher_environment() -> Iterator[None]:
    """Let the publisher's constructors run offline and quietly: perth's watermarker needs
    setuptools' pkg_resources (absent in new setuptools); fall back to the package's dummy."""
    import perth

    saved = perth.PerthImplicitWatermarker
    try:
        saved()
    except Exception:  # noqa: BLE001 - any failure: fall back to the package's dummy
        perth.PerthImplicitWatermarker = perth.DummyWatermarker
    try:
        yield
    finally:
        perth.PerthImplicitWatermarker = saved


def randomize_untrained(module: torch.nn.Module, seed: int) -> None:
    """Give norms and zero-initialised layers non-trivial values, so every path carries signal.

    Fresh modules have LayerNorm/RMSNorm weights of 1 and many zero biases; a gate over such
    a model would never see a wrong scale or a dropped bias. GPT-2 names its norms `ln_*`.
    """
    gen = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, p in module.named_parameters():
            if p.ndim == 1 and ("norm" in name or name.endswith("bias") or ".ln_" in name):
                p.add_(0.05 * torch.randn(p.shape, generator=gen))


def synthetic_reference(seconds: float, seed: int, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """A voiced, vibrato'd harmonic tone with breath noise: a deterministic stand-in reference."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * sample_rate)) / sample_rate
    f0 = 140.0 + 20.0 * np.sin(2 * np.pi * 4.5 * t)
    phase = 2 * np.pi * np.cumsum(f0) / sample_rate
    wav = sum(np.sin(k * phase) / k for k in range(1, 9))
    envelope = 0.5 + 0.5 * np.sin(2 * np.pi * 2.0 * t) ** 2
    wav = 0.2 * envelope * wav + 0.01 * rng.standard_normal(t.size)
    return wav.astype(np.float32)
