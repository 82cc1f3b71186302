"""Build a Kokoro bundle: the three graphs at their buckets, the host's source weights, and
the files a host needs with no Python packages (vocabulary, voices, licence: ``host_files``;
misaki's G2P data in ``g2p/``: ``g2p_files``)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import torch

from conversion.core.bundle import BundleWriter
from conversion.core.export.precision import Precision
from conversion.core.export.program import AssetInfo
from conversion.core.host.buckets import BucketTable
from conversion.core.progress import progress_steps

from .config import PUBLISHED
from .graphs import GRAPHS, graph_specs
from .host_files import add_host_files

HOST_DATA = "host_source.npz"  # m_source.l_linear weight and bias, for the host source


def export_bundle(
    kmodel: torch.nn.Module,
    dest: Path,
    precision: Precision | str = Precision.FP32,
    overwrite: bool = False,
    weights_sha256: str | None = None,
    buckets: Mapping[str, BucketTable] | None = None,
    graphs: Sequence[str] = GRAPHS,
    progress: bool = True,
    key: dict | None = None,
    info: AssetInfo | None = None,
    voice_dirs: Iterable[str | Path] = (),
) -> Path:
    """Export `graphs` of `kmodel` into a bundle at `dest` (atomically), with the host files
    (every voice the pipeline can name, `voice_dirs`' `.pt` packs included)."""
    tables = dict(buckets or PUBLISHED.buckets)
    specs = graph_specs(kmodel, tables, graphs)
    total = sum(len(s.functions) for s in specs)
    source = kmodel.decoder.generator.m_source.l_linear
    config = {"buckets": {g: t.to_json() for g, t in tables.items() if g in graphs}}
    with (
        progress_steps(total, "export kokoro", enabled=progress) as bar,
        BundleWriter(
            dest,
            "kokoro",
            precision=precision,
            overwrite=overwrite,
            weights_sha256=weights_sha256,
            config=config,
            key=key,
            info=info,
        ) as bundle,
    ):
        # First, so that a missing spaCy pipeline fails in seconds, not after the graphs (and
        # imported here: spaCy loads only when a bundle is written).
        from .g2p_files import add_g2p_files

        add_g2p_files(bundle)
        # Side by side: the converter uses one core (published: ~5 min instead of ~13).
        bundle.add_graphs(
            specs, workers=os.cpu_count() or 1, on_function=lambda g, fn: bar.step(f"{g}.{fn}")
        )
        bundle.add_arrays(
            HOST_DATA,
            {
                "l_linear_weight": source.weight.detach().float().numpy(),
                "l_linear_bias": source.bias.detach().float().numpy(),
            },
        )
        add_host_files(bundle, voice_dirs)
    return Path(dest)
