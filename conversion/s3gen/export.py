"""The bundle every model built on T3 + S3Gen writes: its five graphs, their precision mixes,
the host tables, the default voice, the tokenizer, LICENSE and README.

    t3              the model's own (`t3_spec`)                           int8 | fp32
    flow_encoder    encode_N{n}: tokens -> mu                              fp32
    flow_estimator  estimate_F{f}: one velocity                            fp32 | fp16
    hift_f0         f0_F{f}: mel -> f0                                     fp32
    hift_trunk      trunk_F{f}: mel + source STFT -> magnitude, phase      fp32

What differs by model is handed in: T3's graph and host tables, the default voice made from the
snapshot's conds.pt, and the README (the model's host steps).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from conversion.core.bundle import BundleWriter
from conversion.core.export.precision import Precision
from conversion.core.export.program import AssetInfo
from conversion.core.progress import progress_steps

from .flow.graphs import encoder_graph_spec, estimator_graph_spec
from .flow.host import flow_host_arrays
from .hift.graphs import f0_graph_spec, trunk_graph_spec
from .hift.host import hift_host_arrays
from .host_files import add_license_and_readme

GRAPHS = ("t3", "flow_encoder", "flow_estimator", "hift_f0", "hift_trunk")
HOST_ARRAYS = {"t3": "t3_host.npz", "flow": "flow_host.npz", "hift": "hift_host.npz"}
DEFAULT_VOICE = "voice_default.npz"
TOKENIZER = "tokenizer.json"
# `--dtype`: fp32 = every graph fp32 (the parity reference); int8 = T3 int8, the rest fp32;
# fp16 = T3 int8 and the estimator fp16 (meant for a device)
MIXES: dict[str, dict[str, str]] = {
    "fp32": {},
    "int8": {"t3": "int8"},
    "fp16": {"t3": "int8", "flow_estimator": "fp16"},
}
S3GEN_SPECS = {
    "flow_encoder": encoder_graph_spec,
    "flow_estimator": estimator_graph_spec,
    "hift_f0": f0_graph_spec,
    "hift_trunk": trunk_graph_spec,
}


def graph_precisions(dtype: str) -> dict[str, str]:
    """Each graph's precision in a bundle of `dtype`."""
    return {g: MIXES[dtype].get(g, "fp32") for g in GRAPHS}


def s3gen_graph_spec(model: Any, config: Any, graph: str) -> Any:
    """The spec of one of S3Gen's four graphs (`model.s3gen`'s, at `config`'s buckets)."""
    return S3GEN_SPECS[graph](model, config)


def write_s3gen_bundle(
    name: str,
    model: Any,
    config: Any,
    dest: Path,
    *,
    spec: Callable[[str], Any],
    t3_arrays: Callable[[], dict[str, Any]],
    default_voice: Callable[[Any], Any],
    readme: str,
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
    """Export `graphs` (`spec(graph)` each) into a `name` bundle at `dest` (atomically), with
    the host tables (`t3_arrays()`, S3Gen's), the voice `default_voice(model.conds)` when the
    snapshot has conds.pt, `snapshot`'s tokenizer, LICENSE and `readme`. `precisions`
    overrides the per-graph precision of `dtype` (the gate's int8-T3 and fp16-estimator side
    bundles)."""
    per_graph = {**graph_precisions(dtype), **(precisions or {})}
    specs = [spec(g) for g in graphs]
    total = sum(len(s.functions) for s in specs)
    bundle_config = {
        "config": config.to_json(),
        "graphs": {g: per_graph[g] for g in graphs},
        "buckets": {s.name: s.meta.get("buckets") for s in specs},
    }
    with (
        progress_steps(total, f"export {name}", enabled=progress) as bar,
        BundleWriter(
            dest,
            name,
            precision=Precision.parse(dtype),
            overwrite=overwrite,
            weights_sha256=weights_sha256,
            config=bundle_config,
            key=key,
            info=info,
        ) as bundle,
    ):
        for s in specs:
            bundle.add_graph(
                s,
                precision=per_graph[s.name],
                on_function=lambda fn, g=s.name: bar.step(f"{g}.{fn}"),
            )
        bundle.add_arrays(HOST_ARRAYS["t3"], t3_arrays())
        bundle.add_arrays(HOST_ARRAYS["flow"], flow_host_arrays(model))
        bundle.add_arrays(HOST_ARRAYS["hift"], hift_host_arrays(model))
        with tempfile.TemporaryDirectory(prefix=f"voxport-{name}-export-") as tmp:
            if model.conds is not None:
                bundle.add_file(default_voice(model.conds).save(Path(tmp) / DEFAULT_VOICE))
        if snapshot is not None:
            bundle.add_file(Path(snapshot) / TOKENIZER)
        add_license_and_readme(bundle, readme)
    return Path(dest)
