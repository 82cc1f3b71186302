"""Chatterbox Turbo as a voxport port: name, configurations, weights (a snapshot folder or
seeded random ones, cached), graphs and export."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conversion.core.errors import WeightsError
from conversion.core.runs import BenchRun, GateRun
from conversion.s3gen.port import S3GenPort

from . import weights
from .calibration import CALIBRATION
from .config import CONFIG_FILE, TurboConfig, by_name
from .export import ASSET_INFO

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


class ChatterboxTurboPort(S3GenPort):
    name = "chatterbox_turbo"
    summary = "Chatterbox Turbo (GPT-2 T3 + mean-flow S3Gen + HiFT)"
    layout = 1
    asset_info = ASSET_INFO
    hub_repo = "ResembleAI/chatterbox-turbo"
    hub_files = (*weights.REQUIRED, weights.TOKENIZER_CONFIG, weights.CONDS, CONFIG_FILE)
    no_weights = (
        "chatterbox_turbo: no weights given. Pass --weights DIR (a local snapshot of "
        "ResembleAI/chatterbox-turbo: ve.safetensors, t3_turbo_v1.safetensors, "
        "s3gen_meanflow.safetensors, tokenizer.json, conds.pt) or --weights random "
        "(seeded random weights: noise)"
    )
    calibration = CALIBRATION
    checkpoint_files = (*weights.REQUIRED, weights.CONDS)
    ref_hint = " (over 5 s)"

    def config(self, name: str) -> TurboConfig:
        return by_name(name)

    def write_random_snapshot(self, folder: Path, config: Any, seed: int) -> None:
        weights.random_snapshot(folder, config, seed)

    def check_snapshot(self, folder: Path, config: Any) -> None:
        weights.check_layout(folder)  # the files now, before any bundle is looked for
        check_snapshot_sizes(folder, config)

    def open_pipeline(self, bundle: Path, isolate: bool):
        from .pipeline import TurboPipeline

        return TurboPipeline(bundle, isolate=isolate)

    def clone_voice(self, model: Any, options: Any, pipeline: Any, config: Any) -> Any:
        from .voice import clone_voice

        return clone_voice(model, options.ref, config)

    def bundle_exporter(self):
        from .export import export_bundle

        return export_bundle

    def gate_sizes(self, config: Any) -> Any:
        from .gate.ladder import gate_config

        return gate_config(config)

    # -- gate and bench (conversion/core/runs.py) ---------------------------------------------

    def load_model(self, folder: Path, config: Any):
        return weights.load_model(folder)

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
