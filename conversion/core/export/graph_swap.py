"""A copy of a bundle with one graph re-exported: what a mutant catalogue's graph fault runs
on. Written by the project's `BundleWriter` (so the copy verifies like any bundle), every other
graph and host file copied as it is; the caller exports the replaced graph's spec (with the
fault in) at the sizes `config` gives."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from conversion.core.bundle import BundleWriter, load_manifest
from conversion.core.export.program import AssetInfo


def bundle_with_graph(
    base: Path, spec: Any, config: dict[str, Any], dest: Path, info: AssetInfo | None
) -> Path:
    """`base` with graph `spec.name` replaced by `spec` (its precision kept), written at `dest`;
    `config` is the manifest's model config at the replaced graph's sizes."""
    manifest = load_manifest(base)
    bundle_config = {**manifest.config, "config": config}
    bundle_config["buckets"] = {
        **bundle_config.get("buckets", {}),
        spec.name: spec.meta.get("buckets"),
    }
    with BundleWriter(
        dest,
        manifest.model,
        precision=manifest.precision,
        weights_sha256=manifest.weights_sha256,
        config=bundle_config,
        key=manifest.key,
        info=info,
    ) as writer:
        for name, entry in manifest.graphs.items():
            if name == spec.name:
                writer.add_graph(spec, precision=entry["precision"])
                continue
            src = base / entry["asset"]
            if src.is_dir():
                shutil.copytree(src, writer.staging / entry["asset"])
            else:
                shutil.copy2(src, writer.staging / entry["asset"])
            writer.graphs[name] = dict(entry)
        for name in manifest.meta.get("files", {}):
            writer.add_file(base / name)
    return dest
