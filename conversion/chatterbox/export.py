"""Build a Chatterbox bundle: five graphs at their buckets, the host's tables and the voice
(the S3Gen bundle, `conversion/s3gen/export.py`, with Chatterbox's T3).

    t3              prefill_P{P} + decode, one KV state (CFG batch 2)      int8 | fp32
    flow_estimator  estimate_F{f}: one CFM velocity, CFG batch 2           fp32 | fp16

`--dtype` picks the mix: fp32 = every graph fp32 (the parity reference); int8 = T3 int8,
the rest fp32 (what the Linux runtime runs at speed); fp16 = T3 int8 and the estimator fp16,
the rest fp32 (meant for a device; the Linux runtime emulates fp16 matmuls, 115-225x slower
than fp32: `docs/tools/op_table.py --only linear_fp32 linear_fp16`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from conversion.core.export.program import AssetInfo
from conversion.s3gen.export import DEFAULT_VOICE as DEFAULT_VOICE  # the layout, re-exported
from conversion.s3gen.export import HOST_ARRAYS as HOST_ARRAYS
from conversion.s3gen.export import TOKENIZER as TOKENIZER
from conversion.s3gen.export import s3gen_graph_spec, write_s3gen_bundle

from .config import ChatterboxConfig
from .host_files import README
from .t3.graphs import t3_graph_spec
from .t3.host import t3_host_arrays
from .voice import Voice

if TYPE_CHECKING:
    from chatterbox.tts import ChatterboxTTS

# What each exported asset's metadata says (the port's `asset_info`; a mutant's bundle too).
ASSET_INFO = AssetInfo(
    author="Resemble AI (Chatterbox); exported to Core AI by voxport",
    license="MIT",
    description="Chatterbox text-to-speech with zero-shot voice cloning",
)


def _spec(model: ChatterboxTTS, config: ChatterboxConfig, graph: str) -> Any:
    if graph == "t3":
        return t3_graph_spec(model, config)
    return s3gen_graph_spec(model, config, graph)


def export_bundle(
    model: ChatterboxTTS, config: ChatterboxConfig, dest: Path, dtype: str = "fp32", **options: Any
) -> Path:
    """Export `model` into a bundle at `dest` (atomically): the S3Gen bundle with Chatterbox's T3;
    `options` are `write_s3gen_bundle`'s (`graphs`, `precisions`: the gate's int8-T3 and
    fp16-estimator side bundles override the per-graph precision of `dtype`)."""
    return write_s3gen_bundle(
        "chatterbox",
        model,
        config,
        dest,
        spec=lambda graph: _spec(model, config, graph),
        t3_arrays=lambda: t3_host_arrays(model),
        default_voice=lambda conds: Voice.from_conditionals(model, conds),
        readme=README,
        dtype=dtype,
        **options,
    )
