"""Chatterbox as a voxport port: name, configurations, weights (a snapshot folder or seeded
random ones, cached), graphs and export."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conversion.core.runs import BenchRun, GateRun
from conversion.s3gen.port import S3GenPort

from . import weights
from .calibration import CALIBRATION
from .config import CONFIG_FILE, ChatterboxConfig, by_name
from .export import ASSET_INFO


class ChatterboxPort(S3GenPort):
    name = "chatterbox"
    summary = "Chatterbox (T3 + S3Gen + HiFT)"
    layout = 4  # 2: LICENSE and README travel with the bundle (with the tables, default voice
    # and tokenizer, a device host needs nothing from the Python packages); 3: squares as
    # x * x, not pow (docs/speed.md); 4: the flow encoder's upsample without a gather
    # (docs/speed.md), so older bundles re-export
    asset_info = ASSET_INFO
    hub_repo = "ResembleAI/chatterbox"
    # The loader also reads the size marker (its check_snapshot): absent from the publisher's
    # repo (the published sizes), present in a snapshot voxport wrote at other sizes.
    hub_files = (*weights.REQUIRED, weights.CONDS, CONFIG_FILE)
    no_weights = (
        "chatterbox: no weights given. Pass --weights DIR (a local snapshot of "
        "ResembleAI/chatterbox: ve.safetensors, t3_cfg.safetensors, s3gen.safetensors, "
        "tokenizer.json, conds.pt) or --weights random (seeded random weights: noise)"
    )
    calibration = CALIBRATION  # calibration.py
    checkpoint_files = (*weights.REQUIRED, weights.CONDS)

    def config(self, name: str) -> ChatterboxConfig:
        return by_name(name)

    def write_random_snapshot(self, folder: Path, config: Any, seed: int) -> None:
        weights.random_snapshot(folder, config, seed)

    def check_snapshot(self, folder: Path, config: Any) -> None:
        weights.check_snapshot(folder, config)

    def open_pipeline(self, bundle: Path, isolate: bool):
        from .pipeline import ChatterboxPipeline

        return ChatterboxPipeline(bundle, isolate=isolate)

    def clone_voice(self, model: Any, options: Any, pipeline: Any, config: Any) -> Any:
        from . import voice as voice_mod

        return voice_mod.clone_voice(
            model,
            options.ref,
            exaggeration=options.exaggeration,
            prompt_tokens_max=pipeline.config.prompt_tokens_max,
        )

    def bundle_exporter(self):
        from .export import export_bundle

        return export_bundle

    def gate_sizes(self, config: Any) -> Any:
        from .gate.ladder import gate_config

        return gate_config(config)

    # -- gate and bench (conversion/core/runs.py) ---------------------------------------------

    def load_model(self, folder: Path, config: Any):
        return weights.load_model(folder, config)

    def run_gate(self, run: GateRun) -> int:
        from .gate import run_gate

        return run_gate(
            run.model,
            run.config,
            run.source,
            run.seed,
            stop_on_fail=run.stop_on_fail,
            json_path=run.json_path,
            markdown=run.markdown,
            fp16_steps=run.options.fp16_steps,
        )

    def run_mutants(self, run: GateRun):
        from .mutants import run_mutants

        names = ",".join(m.name for m in run.mutants)  # its spec: names, in catalogue order
        return run_mutants(run.model, run.config, run.source, run.seed, names)

    def run_bench(self, run: BenchRun) -> int:
        from .bench import run_bench

        return run_bench(
            run.model,
            run.config,
            run.source,
            run.seed,
            run.repeats,
            run.json_path,
            profile=run.profile,
        )


PORT = ChatterboxPort()
