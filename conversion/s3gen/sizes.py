"""S3Gen's fixed rates, and the bucket sizes a model hands the shared graphs and host.

The rates are the publisher's (`s3gen.py`: 24 kHz audio, 25 Hz speech tokens, 50 Hz mels),
the same for every model built on S3Gen. The buckets are each model's own choice: its config
passes them as any object with these three fields (`ChatterboxConfig` is one).
"""

from __future__ import annotations

from typing import Protocol

SAMPLE_RATE = 24_000
TOKEN_HOP = 960  # samples per speech token (25 Hz); two mel frames per token
MEL_HOP = 480  # samples per mel frame (50 Hz)


class S3GenBuckets(Protocol):
    """The static buckets S3Gen's graphs are exported at (read-only, as a frozen config's are)."""

    @property
    def encoder_tokens(self) -> tuple[int, ...]:
        """`flow_encoder`'s token buckets (prompt + speech tokens)."""
        ...

    @property
    def estimator_frames(self) -> tuple[int, ...]:
        """`flow_estimator`'s mel-frame buckets (2 per token)."""
        ...

    @property
    def vocoder_frames(self) -> tuple[int, ...]:
        """`hift_f0` and `hift_trunk`'s mel-frame buckets (the generated frames only)."""
        ...
