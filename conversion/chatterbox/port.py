"""Chatterbox as a voxport port: name, configurations, weights (a snapshot folder or seeded
random ones, cached), graphs and export."""

from __future__ import annotations

import sys
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
from .config import CONFIG_FILE, ChatterboxConfig, by_name
from .export import ASSET_INFO, GRAPHS, graph_precisions


class ChatterboxPort(ModelPort):
    name = "chatterbox"
    summary = "Chatterbox (T3 + S3Gen + HiFT)"
    graphs = GRAPHS
    layout = 4  # 2: LICENSE and README travel with the bundle (with the tables, default voice
    # and tokenizer, a device host needs nothing from the Python packages); 3: squares as
    # x * x, not pow (docs/speed.md); 4: the flow encoder's upsample without a gather
    # (docs/speed.md), so older bundles re-export
    asset_info = ASSET_INFO
    hub_repo = "ResembleAI/chatterbox"
    # The loader also reads the size marker (its check_snapshot): absent from the publisher's
    # repo (the published sizes), present in a snapshot voxport wrote at other sizes.
    hub_files = (*weights.REQUIRED, weights.CONDS, CONFIG_FILE)

    def config(self, name: str) -> ChatterboxConfig:
        return by_name(name)

    def resolve_weights(self, spec: str | Path | None, config: Any, seed: int) -> Path:
        """The snapshot folder for `--weights` (a folder, "random", or nothing)."""
        pin_torch_threads()
        if spec is None:
            raise WeightsError(
                "chatterbox: no weights given. Pass --weights DIR (a local snapshot of "
                "ResembleAI/chatterbox: ve.safetensors, t3_cfg.safetensors, s3gen.safetensors, "
                "tokenizer.json, conds.pt) or --weights random (seeded random weights: noise)"
            )
        if spec == "random":
            folder = self.cached_random_snapshot(
                config.name, seed, lambda folder: weights.random_snapshot(folder, config, seed)
            )
            # a snapshot cached before the current calibration (calibration.py) is rewritten
            if (read_manifest(folder) or {}).get("calibration") != CALIBRATION:
                weights.random_snapshot(folder, config, seed)
            return folder
        folder = Path(spec).expanduser()
        # Files, their headers and the sizes now, before any bundle is looked for or exported
        # (a speak reaches the model only when it exports).
        weights.check_snapshot(folder, config)
        return folder

    def weights_sha256(self, folder: Path) -> str:
        """One hash over the checkpoint files' contents (what a bundle was exported from)."""
        return files_sha256(folder, [*weights.REQUIRED, weights.CONDS])

    def graph_precisions(self, dtype: str) -> dict[str, str]:
        return graph_precisions(dtype)

    def open_pipeline(self, bundle: Path, isolate: bool):
        from .pipeline import ChatterboxPipeline

        return ChatterboxPipeline(bundle, isolate=isolate)

    def options_for_pipeline(self, options, pipeline, folder: Path, config: Any):
        """The voice to speak with: cloned from `options.ref` with the publisher's encoders
        (eager, the weights in memory), or the bundle's default voice."""
        from dataclasses import replace

        if not options.ref:
            if pipeline.default_voice is None:
                raise UserError(
                    "chatterbox: the snapshot has no default voice (conds.pt); pass --ref voice.wav"
                )
            return replace(options, voice=pipeline.default_voice)
        from . import voice as voice_mod
        from . import weights

        model = weights.load_model(folder, config)
        print(f"chatterbox: cloning the voice in {options.ref}", file=sys.stderr)
        voice = voice_mod.clone_voice(
            model,
            options.ref,
            exaggeration=options.exaggeration,
            prompt_tokens_max=pipeline.config.prompt_tokens_max,
        )
        return replace(options, voice=voice)

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
        return weights.load_model(folder, config)

    def check_bundles(self, source: BundleSource, config: Any, dtype: str) -> None:
        """The gate's bundles (fp32 at the gate's sizes and its int8-T3 sibling:
        `gate_bundles`; the bench runs on them too), each refused now when it is a `--bundle`
        made from other arguments: before the model loads and the oracle runs."""
        from .gate.ladder import gate_config

        sizes = gate_config(config)
        variant = None if sizes == config else "gate"
        source.check(sizes, "fp32", variant=variant)
        source.check(sizes, "int8", graphs=("t3",), variant=f"{variant or 'gate'}-t3")

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
