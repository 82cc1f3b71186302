"""The gate's setup: the sizes it exports and its bundles (fp32 at the gate's sizes and the
int8-T3 sibling), the utterance it speaks and T3's step budget."""

from __future__ import annotations

from pathlib import Path

from conversion.core.bundle_source import BundleSource

from ..config import TurboConfig

GATE_TEXT = "Hello from voxport."
# T3's draw budget (inference_turbo's max_gen_len): the calibrated random weights stop inside
# it (calibration.STOP_STEPS)
GATE_TOKENS = {"reduced": 24, "published": 40}


def gate_config(config: TurboConfig) -> TurboConfig:
    """The sizes the gate exports: the published ones cut to the buckets the gate's utterance
    uses (prefill@256: the default voice's 6 s reference is 150 T3 prompt rows; encoder@256,
    estimator@512, vocoder@256; a published T3 export is 1.2 GB per precision). The reduced
    configuration is gated whole."""
    if not config.is_published:
        return config
    return TurboConfig.from_json(
        {
            **config.to_json(),
            "prefill_buckets": [256],
            "encoder_tokens": [256],
            "estimator_frames": [512],
            "vocoder_frames": [256],
        }
    )


def gate_bundles(bundles: BundleSource, config: TurboConfig) -> tuple[Path, Path]:
    """The fp32 bundle at the gate's sizes and its int8-T3 sibling (T3 only)."""
    sizes = gate_config(config)
    variant = None if sizes == config else "gate"  # speak's published bundle stays whole
    fp32 = bundles.get(sizes, "fp32", variant=variant)
    int8 = bundles.get(sizes, "int8", graphs=("t3",), variant=f"{variant or 'gate'}-t3")
    return fp32, int8
