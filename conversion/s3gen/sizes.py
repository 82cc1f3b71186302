"""S3Gen's fixed rates, the bucket sizes a model hands the shared graphs and host, and the
reduced sizes its constructors are made to build.

The rates are the publisher's (`s3gen.py`: 24 kHz audio, 25 Hz speech tokens, 50 Hz mels),
the same for every model built on S3Gen. The buckets are each model's own choice: its config
passes them as any object with these three fields (`ChatterboxConfig` is one). So are the
module sizes (`S3GenSizes`): `S3Gen()` builds its encoder, estimator and vocoder with literal
arguments (and T3 reads its backbone's from a module-level table), so a reduced model is built
by the same constructors with a few arguments overridden (`constructors_patched`). What must
not shrink: the encoder's width (512: the token embedding and `encoder_proj` are fixed at it).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, Protocol

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


class S3GenSizes(Protocol):
    """The S3Gen module sizes a config overrides (read-only, as a frozen config's are)."""

    @property
    def is_published(self) -> bool:
        """The publisher's own sizes: nothing to override."""
        ...

    @property
    def encoder_blocks(self) -> int:
        """`UpsampleConformerEncoder(num_blocks=)`: its blocks before the upsample."""
        ...

    @property
    def encoder_linear_units(self) -> int: ...

    @property
    def estimator_blocks(self) -> int:
        """`ConditionalDecoder(n_blocks=)`."""
        ...

    @property
    def estimator_mid_blocks(self) -> int: ...

    @property
    def hift_base_channels(self) -> int: ...

    @property
    def f0_cond_channels(self) -> int:
        """`ConvRNNF0Predictor(cond_channels=)`: HiFT's f0 predictor."""
        ...


def _with_fixed_kwargs(cls: type, fixed: dict[str, Any]) -> Any:
    def build(*args: Any, **kwargs: Any) -> Any:
        kwargs.update(fixed)
        return cls(*args, **kwargs)

    return build


@contextlib.contextmanager
def constructors_patched(
    sizes: S3GenSizes, t3_backbone: str, t3_sizes: dict[str, Any]
) -> Iterator[None]:
    """Make the publisher's hard-coded constructors build `sizes` in the block: `S3Gen()` (any
    variant) its encoder, estimator and vocoder, and T3 its backbone (the publisher's
    `LLAMA_CONFIGS[t3_backbone]`, updated with `t3_sizes`). The published sizes: no patch."""
    if sizes.is_published:
        yield
        return
    from chatterbox.models.s3gen import s3gen as s3gen_module
    from chatterbox.models.t3 import llama_configs

    backbone = llama_configs.LLAMA_CONFIGS[t3_backbone]
    saved_backbone = dict(backbone)
    overrides = {
        "UpsampleConformerEncoder": {
            "num_blocks": sizes.encoder_blocks,
            "linear_units": sizes.encoder_linear_units,
        },
        "ConditionalDecoder": {
            "n_blocks": sizes.estimator_blocks,
            "num_mid_blocks": sizes.estimator_mid_blocks,
        },
        "HiFTGenerator": {"base_channels": sizes.hift_base_channels},
        "ConvRNNF0Predictor": {"cond_channels": sizes.f0_cond_channels},
    }
    saved = {name: getattr(s3gen_module, name) for name in overrides}
    backbone.update(t3_sizes)
    try:
        for name, fixed in overrides.items():
            setattr(s3gen_module, name, _with_fixed_kwargs(saved[name], fixed))
        yield
    finally:
        backbone.clear()
        backbone.update(saved_backbone)
        for name, ctor in saved.items():
            setattr(s3gen_module, name, ctor)


def speech_budget_fit_problems(
    buckets: S3GenBuckets, prompt_tokens_max: int, speech_budget: int
) -> list[str]:
    """Why the longest allowed prompt + a full T3 chunk (`speech_budget` tokens) would not fit
    S3Gen's `buckets` (empty when it fits). The encoder is full attention: it cannot be
    chunked exactly."""
    tokens = prompt_tokens_max + speech_budget
    problems = []
    if tokens > max(buckets.encoder_tokens):
        problems.append(
            f"prompt {prompt_tokens_max} + speech {speech_budget} = {tokens} "
            f"tokens > the largest encoder bucket {max(buckets.encoder_tokens)}"
        )
    if 2 * tokens > max(buckets.estimator_frames):
        problems.append(
            f"{2 * tokens} mel frames > the largest estimator bucket "
            f"{max(buckets.estimator_frames)}"
        )
    if 2 * speech_budget > max(buckets.vocoder_frames):
        problems.append(
            f"{2 * speech_budget} generated frames > the largest vocoder bucket "
            f"{max(buckets.vocoder_frames)}"
        )
    return problems
