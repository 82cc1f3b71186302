"""Chatterbox Turbo as a voxport port: name, configurations, weights (a snapshot folder or
seeded random ones, cached), graphs and export."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from conversion.core.bundle_source import BundleSource
from conversion.core.errors import UserError, WeightsError
from conversion.core.port import ExportJob, ModelPort
from conversion.core.runs import BenchRun, GateRun
from conversion.core.threads import pin_torch_threads
from conversion.core.weights_folder import files_sha256, read_manifest

from . import weights
from .calibration import CALIBRATION
from .config import CONFIG_FILE, TurboConfig, by_name
from .export import ASSET_INFO, GRAPHS, graph_precisions

# The module sizes a snapshot is built at (its marker file); the buckets are the bundle's.
MODULE_SIZES = (
    "t3_layers",
    "t3_hidden",
    "t3_heads",
    "t3_positions",
    "t3_wte_rows",
    "encoder_blocks",
    "encoder_linear_units",
    "estimator_blocks",
    "estimator_mid_blocks",
    "hift_base_channels",
    "f0_cond_channels",
)


def check_snapshot_sizes(folder: Path, config: TurboConfig) -> None:
    """WeightsError when the snapshot was written at other module sizes than `config`'s."""
    found = weights.read_snapshot_config(folder)
    differ = [f for f in MODULE_SIZES if getattr(found, f) != getattr(config, f)]
    if differ:
        raise WeightsError(
            f"chatterbox_turbo: {folder} holds {found.name} weights ({differ[0]} "
            f"{getattr(found, differ[0])}), not {config.name}'s ({getattr(config, differ[0])}): "
            f"pass --config {found.name}"
        )


class ChatterboxTurboPort(ModelPort):
    name = "chatterbox_turbo"
    summary = "Chatterbox Turbo (GPT-2 T3 + mean-flow S3Gen + HiFT)"
    graphs = GRAPHS
    layout = 1
    asset_info = ASSET_INFO
    hub_repo = "ResembleAI/chatterbox-turbo"
    hub_files = (*weights.REQUIRED, weights.TOKENIZER_CONFIG, weights.CONDS, CONFIG_FILE)

    def config(self, name: str) -> TurboConfig:
        return by_name(name)

    def resolve_weights(self, spec: str | Path | None, config: Any, seed: int) -> Path:
        """The snapshot folder for `--weights` (a folder, "random", or nothing)."""
        pin_torch_threads()
        if spec is None:
            raise WeightsError(
                "chatterbox_turbo: no weights given. Pass --weights DIR (a local snapshot of "
                "ResembleAI/chatterbox-turbo: ve.safetensors, t3_turbo_v1.safetensors, "
                "s3gen_meanflow.safetensors, tokenizer.json, conds.pt) or --weights random "
                "(seeded random weights: noise)"
            )
        if spec == "random":
            folder = self.cached_random_snapshot(
                config.name, seed, lambda folder: weights.random_snapshot(folder, config, seed)
            )
            if (read_manifest(folder) or {}).get("calibration") != CALIBRATION:
                weights.random_snapshot(folder, config, seed)
            return folder
        folder = Path(spec).expanduser()
        weights.check_layout(folder)  # the files now, before any bundle is looked for
        check_snapshot_sizes(folder, config)
        return folder

    def weights_sha256(self, folder: Path) -> str:
        """One hash over the checkpoint files' contents (what a bundle was exported from)."""
        return files_sha256(folder, [*weights.REQUIRED, weights.CONDS])

    def graph_precisions(self, dtype: str) -> dict[str, str]:
        return graph_precisions(dtype)

    def open_pipeline(self, bundle: Path, isolate: bool):
        from .pipeline import TurboPipeline

        return TurboPipeline(bundle, isolate=isolate)

    def options_for_pipeline(self, options, pipeline, folder: Path, config: Any):
        """The voice to speak with: cloned from `options.ref` with the publisher's encoders
        (eager, the weights in memory), or the bundle's default voice."""
        if not options.ref:
            if pipeline.default_voice is None:
                raise UserError(
                    "chatterbox_turbo: the snapshot has no default voice (conds.pt); pass "
                    "--ref voice.wav (over 5 s)"
                )
            return replace(options, voice=pipeline.default_voice)
        from .voice import clone_voice

        model = weights.load_model(folder)
        print(f"chatterbox_turbo: cloning the voice in {options.ref}", file=sys.stderr)
        return replace(options, voice=clone_voice(model, options.ref, config))

    def export_bundle(self, job: ExportJob) -> Path:
        from .export import export_bundle

        return export_bundle(
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

    # -- gate and bench (conversion/core/runs.py) ---------------------------------------------

    def load_model(self, folder: Path, config: Any):
        return weights.load_model(folder)

    def check_bundles(self, source: BundleSource, config: Any, dtype: str) -> None:
        """The gate's bundles (`gate.ladder.gate_bundles`: fp32 at the gate's sizes and the
        int8-T3 sibling), each refused now when it is a `--bundle` made from other arguments."""
        from .gate.ladder import gate_config

        sizes = gate_config(config)
        variant = None if sizes == config else "gate"
        source.check(sizes, "fp32", variant=variant)
        source.check(sizes, "int8", graphs=("t3",), variant=f"{variant or 'gate'}-t3")

    def run_gate(self, run: GateRun) -> int:
        from .gate import run_gate

        return run_gate(run)

    def run_mutants(self, run: GateRun):
        from .mutants import run_mutants

        return run_mutants(run)

    def run_bench(self, run: BenchRun) -> int:
        from .bench import run_bench

        return run_bench(run)


PORT = ChatterboxTurboPort()
