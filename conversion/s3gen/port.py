"""The port half every model built on T3 + S3Gen shares: its five graphs and their precision
mixes, weights (a snapshot folder or seeded random ones, cached and recalibrated), the voice to
speak with, the export and the gate's bundles.

A model subclasses `S3GenPort` with its weights module's hooks (`write_random_snapshot`,
`check_snapshot`, `clone_voice`), its calibration stamp, and the lazy imports of its pipeline,
export and gate sizes.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from conversion.core.bundle_source import BundleSource
from conversion.core.errors import UserError, WeightsError
from conversion.core.port import ExportJob, ModelPort
from conversion.core.threads import pin_torch_threads
from conversion.core.weights_folder import files_sha256, read_manifest

from .export import GRAPHS, graph_precisions


class S3GenPort(ModelPort):
    graphs = GRAPHS
    # the message for no `--weights` (the hub repo and its files, or `random`)
    no_weights: ClassVar[str]
    # what a random snapshot carries in its manifest: one written before it is rewritten
    calibration: ClassVar[Any]
    checkpoint_files: ClassVar[tuple[str, ...]]  # what `weights_sha256` hashes
    ref_hint: ClassVar[str] = ""  # after "pass --ref voice.wav" when there is no default voice

    # -- what each model provides ---------------------------------------------------------

    def write_random_snapshot(self, folder: Path, config: Any, seed: int) -> None:
        """Seeded random weights in the publisher's layout, into `folder`."""
        raise NotImplementedError

    def check_snapshot(self, folder: Path, config: Any) -> None:
        """WeightsError when `folder` is not a snapshot at `config`'s sizes."""
        raise NotImplementedError

    def clone_voice(self, model: Any, options: Any, pipeline: Any, config: Any) -> Any:
        """The voice in `options.ref`, cloned with the publisher's encoders (`model`)."""
        raise NotImplementedError

    def bundle_exporter(self) -> Callable[..., Path]:
        """The model's `export.export_bundle` (imported when a bundle is written)."""
        raise NotImplementedError

    def gate_sizes(self, config: Any) -> Any:
        """The config the gate runs at for `config` (its `gate.ladder.gate_config`)."""
        raise NotImplementedError

    # -- shared -----------------------------------------------------------------------------

    def resolve_weights(self, spec: str | Path | None, config: Any, seed: int) -> Path:
        """The snapshot folder for `--weights` (a folder, "random", or nothing)."""
        pin_torch_threads()
        if spec is None:
            raise WeightsError(self.no_weights)
        if spec == "random":
            folder = self.cached_random_snapshot(
                config.name, seed, lambda folder: self.write_random_snapshot(folder, config, seed)
            )
            # a snapshot cached before the current calibration is rewritten
            if (read_manifest(folder) or {}).get("calibration") != self.calibration:
                self.write_random_snapshot(folder, config, seed)
            return folder
        folder = Path(spec).expanduser()
        # Files, their headers and the sizes now, before any bundle is looked for or exported
        # (a speak reaches the model only when it exports).
        self.check_snapshot(folder, config)
        return folder

    def weights_sha256(self, folder: Path) -> str:
        """One hash over the checkpoint files' contents (what a bundle was exported from)."""
        return files_sha256(folder, list(self.checkpoint_files))

    def graph_precisions(self, dtype: str) -> dict[str, str]:
        return graph_precisions(dtype)

    def options_for_pipeline(self, options: Any, pipeline: Any, folder: Path, config: Any) -> Any:
        """The voice to speak with: cloned from `options.ref` with the publisher's encoders
        (eager, the weights in memory), or the bundle's default voice."""
        if not options.ref:
            if pipeline.default_voice is None:
                raise UserError(
                    f"{self.name}: the snapshot has no default voice (conds.pt); pass "
                    f"--ref voice.wav{self.ref_hint}"
                )
            return replace(options, voice=pipeline.default_voice)
        model = self.load_model(folder, config)
        print(f"{self.name}: cloning the voice in {options.ref}", file=sys.stderr)
        return replace(options, voice=self.clone_voice(model, options, pipeline, config))

    def export_bundle(self, job: ExportJob) -> Path:
        return self.bundle_exporter()(
            self.model_for(job),
            job.config,
            job.dest,
            job.dtype,
            overwrite=job.overwrite,
            weights_sha256=job.key.weights_sha256,
            snapshot=job.folder,
            graphs=tuple(job.key.graphs),
            precisions=job.key.graphs,
            key=job.key.to_json(),
            info=self.asset_info,
        )

    def check_bundles(self, source: BundleSource, config: Any, dtype: str) -> None:
        """The gate's bundles (fp32 at the gate's sizes and its int8-T3 sibling: the model's
        `gate_bundles`; the bench runs on them too), each refused now when it is a `--bundle`
        made from other arguments: before the model loads and the oracle runs."""
        sizes = self.gate_sizes(config)
        variant = None if sizes == config else "gate"
        source.check(sizes, "fp32", variant=variant)
        source.check(sizes, "int8", graphs=("t3",), variant=f"{variant or 'gate'}-t3")
