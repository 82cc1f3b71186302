"""Build a Chatterbox bundle: five graphs at their buckets, the host's tables and the voice.

    t3              prefill_P{P} + decode, one KV state (CFG batch 2)      int8 | fp32
    flow_encoder    encode_N{n}: tokens -> mu                              fp32
    flow_estimator  estimate_F{f}: one CFM velocity, CFG batch 2           fp32 | fp16
    hift_f0         f0_F{f}: mel -> f0                                     fp32
    hift_trunk      trunk_F{f}: mel + source STFT -> magnitude, phase      fp32

`--dtype` picks the mix: fp32 = every graph fp32 (the parity reference); int8 = T3 int8,
the rest fp32 (what the Linux runtime runs at speed); fp16 = T3 int8 and the estimator fp16,
the rest fp32 (meant for a device; the Linux runtime emulates fp16 matmuls, 115-225x slower
than fp32: `docs/tools/op_table.py --only linear_fp32 linear_fp16`).
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from conversion.core.bundle import BundleWriter
from conversion.core.export.precision import Precision
from conversion.core.export.program import AssetInfo
from conversion.core.progress import progress_steps
from conversion.s3gen.flow.graphs import encoder_graph_spec, estimator_graph_spec
from conversion.s3gen.flow.host import flow_host_arrays
from conversion.s3gen.hift.graphs import f0_graph_spec, trunk_graph_spec
from conversion.s3gen.hift.host import hift_host_arrays

from .config import ChatterboxConfig
from .host_files import add_host_files
from .t3.graphs import t3_graph_spec
from .t3.host import t3_host_arrays
from .voice import Voice

# What each exported asset's metadata says (the port's `asset_info`; a mutant's bundle too).
ASSET_INFO = AssetInfo(
    author="Resemble AI (Chatterbox); exported to Core AI by voxport",
    license="MIT",
    description="Chatterbox text-to-speech with zero-shot voice cloning",
)


if TYPE_CHECKING:
    from chatterbox.tts import ChatterboxTTS

GRAPHS = ("t3", "flow_encoder", "flow_estimator", "hift_f0", "hift_trunk")
HOST_ARRAYS = {"t3": "t3_host.npz", "flow": "flow_host.npz", "hift": "hift_host.npz"}
DEFAULT_VOICE = "voice_default.npz"
TOKENIZER = "tokenizer.json"
MIXES: dict[str, dict[str, str]] = {
    "fp32": {},
    "int8": {"t3": "int8"},
    "fp16": {"t3": "int8", "flow_estimator": "fp16"},
}


def graph_precisions(dtype: str) -> dict[str, str]:
    """Each graph's precision in a bundle of `dtype`."""
    return {g: MIXES[dtype].get(g, "fp32") for g in GRAPHS}


def _spec(model: ChatterboxTTS, config: ChatterboxConfig, graph: str):
    builders = {
        "t3": t3_graph_spec,
        "flow_encoder": encoder_graph_spec,
        "flow_estimator": estimator_graph_spec,
        "hift_f0": f0_graph_spec,
        "hift_trunk": trunk_graph_spec,
    }
    return builders[graph](model, config)


def export_bundle(
    model: ChatterboxTTS,
    config: ChatterboxConfig,
    dest: Path,
    dtype: str = "fp32",
    overwrite: bool = False,
    weights_sha256: str | None = None,
    snapshot: Path | None = None,
    graphs: Sequence[str] = GRAPHS,
    precisions: dict[str, str] | None = None,
    progress: bool = True,
    key: dict | None = None,
    info: AssetInfo | None = None,
) -> Path:
    """Export `graphs` of `model` into a bundle at `dest` (atomically).

    `precisions` overrides the per-graph precision of `dtype` (the gate uses it for its
    int8-T3 and fp16-estimator side bundles).
    """
    per_graph = {**graph_precisions(dtype), **(precisions or {})}
    specs = [_spec(model, config, g) for g in graphs]
    total = sum(len(s.functions) for s in specs)
    bundle_config = {
        "config": config.to_json(),
        "graphs": {g: per_graph[g] for g in graphs},
        "buckets": {s.name: s.meta.get("buckets") for s in specs},
    }
    with (
        progress_steps(total, "export chatterbox", enabled=progress) as bar,
        BundleWriter(
            dest,
            "chatterbox",
            precision=Precision.parse(dtype),
            overwrite=overwrite,
            weights_sha256=weights_sha256,
            config=bundle_config,
            key=key,
            info=info,
        ) as bundle,
    ):
        for spec in specs:
            bundle.add_graph(
                spec,
                precision=per_graph[spec.name],
                on_function=lambda fn, g=spec.name: bar.step(f"{g}.{fn}"),
            )
        bundle.add_arrays(HOST_ARRAYS["t3"], t3_host_arrays(model))
        bundle.add_arrays(HOST_ARRAYS["flow"], flow_host_arrays(model))
        bundle.add_arrays(HOST_ARRAYS["hift"], hift_host_arrays(model))
        with tempfile.TemporaryDirectory(prefix="voxport-cbx-export-") as tmp:
            if model.conds is not None:
                default = Voice.from_conditionals(model, model.conds)
                bundle.add_file(default.save(Path(tmp) / DEFAULT_VOICE))
        if snapshot is not None:
            bundle.add_file(Path(snapshot) / TOKENIZER)
        add_host_files(bundle)
    return Path(dest)
