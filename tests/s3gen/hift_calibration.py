"""What a calibrated S3Gen vocoder must show (`conversion.s3gen.calibration`), for every model
whose random weights carry it: the bounds, and the publisher's untrained scales to show them
failing on."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch


def hift_problems(stats: dict[str, Any], magspec_max: float) -> list[str]:
    """Why `hift_stats` does not look trained: unvoiced, f0 outside adult speech, or an output
    that a replaced mel moves too little (magspec corr above `magspec_max`)."""
    problems = []
    if stats["voiced_share"] < 0.8:
        problems.append(f"voiced share {stats['voiced_share']}")
    lo, hi = stats["f0_hz_p5_p95"]
    if not (70 <= lo and hi <= 300):
        problems.append(f"f0 p5-p95 {lo:.1f}-{hi:.1f} Hz")
    worst = max(stats["magspec_vs_own_mel"].values())
    if worst > magspec_max:
        problems.append(f"a replaced mel scores {worst}")
    return problems


@contextlib.contextmanager
def untrained_hift(hift: torch.nn.Module) -> Iterator[None]:
    """The f0 head and conv_post at the publisher's init scale (std 0.01 conv_post, the f0
    head's default Linear) for the block."""
    head, post = hift.f0_predictor.classifier, hift.conv_post.parametrizations.weight.original0
    saved = head.weight.clone(), head.bias.clone(), post.clone()
    try:
        with torch.no_grad():
            head.weight.mul_(1e-3)
            head.bias.fill_(0.15)
            post.mul_(0.01)
        yield
    finally:
        with torch.no_grad():
            head.weight.copy_(saved[0])
            head.bias.copy_(saved[1])
            post.copy_(saved[2])
