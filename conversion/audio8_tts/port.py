"""Audio8-TTS as a voxport port: name, configurations, weights (a snapshot folder in the
publisher's layout, or seeded random ones, cached), graphs and export."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conversion.core.errors import WeightsError
from conversion.core.port import ExportJob, ModelPort
from conversion.core.runs import BenchRun, GateRun
from conversion.core.threads import pin_torch_threads
from conversion.core.weights_folder import files_sha256, read_manifest

from . import weights
from .codec.config import CONFIGS as CODEC_CONFIGS
from .codec.weights import write_random_codec
from .config import Audio8Config, by_name
from .export import ASSET_INFO, GRAPHS, graph_precisions
from .pipeline import MAX_WORKERS


class Audio8Port(ModelPort):
    name = "audio8_tts"
    summary = "Audio8-TTS-Preview-0.6b (DualAR)"
    graphs = GRAPHS
    layout = 4  # 2: host tables (audio8_host.json), LICENSE and README travel with the bundle;
    # 3: squares as x * x, not pow (docs/speed.md); 4: the `ar` graph's own layers (ar/layers.py,
    # the head a Linear the fp32 rewrite pre-transposes), so older bundles re-export
    asset_info = ASSET_INFO
    hub_repo = "Edge0/Audio8-TTS-Preview-0.6b"
    # config.json names the codec file (`codec_filename`), hence *.pth; the LM may be sharded.
    hub_files = ("*.json", "model*.safetensors", "*.pth")

    def config(self, name: str) -> Audio8Config:
        return by_name(name)

    def config_json(self, config: Audio8Config) -> dict[str, Any]:
        return {
            "config": config.to_json(),
            "codec_config": CODEC_CONFIGS[config.name].to_json(),
        }

    def resolve_weights(self, spec: str | Path | None, config: Any, seed: int) -> Path:
        pin_torch_threads()
        if spec is None:
            raise WeightsError(
                "audio8_tts: no weights given. Pass --weights DIR (a local snapshot: config.json, "
                "model.safetensors, codec.pth, tokenizer.json) or --weights random (noise)"
            )
        if spec == "random":
            codec_cfg = CODEC_CONFIGS[config.name]

            def write(folder: Path) -> Path:
                return weights.random_snapshot(
                    folder,
                    config,
                    seed,
                    codec_writer=lambda p: write_random_codec(p, codec_cfg, seed, nested=True),
                )

            folder = self.cached_random_snapshot(config.name, seed, write)
            if (read_manifest(folder) or {}).get("calibration") != weights.CALIBRATION:
                write(folder)  # a cache drawn before the current calibration (calibration.py)
            return folder
        folder = Path(spec).expanduser()
        weights.check_layout(folder)
        return folder

    def weights_sha256(self, folder: Path) -> str:
        """One hash over the snapshot's files (our own voxport-* manifest excluded)."""
        names = sorted(p.name for p in Path(folder).iterdir() if not p.name.startswith("voxport-"))
        return files_sha256(folder, names)

    def graph_precisions(self, dtype: str) -> dict[str, str]:
        return graph_precisions(dtype)

    # One worker draws frames, a second decodes codec windows beside it.
    max_speak_workers = MAX_WORKERS

    def open_pipeline(self, bundle: Path, isolate: bool):
        from .pipeline import Audio8Pipeline

        return Audio8Pipeline(bundle, isolate=isolate)

    def options_for_pipeline(self, options, pipeline, folder: Path, config: Any):
        """A reference clip registered as the voice, through the bundle's encoder graph."""
        if not options.ref:
            return options
        from dataclasses import replace

        from .voice import register

        voice = register(pipeline.session, options.ref, options.ref_text, pipeline.codec_config)
        return replace(options, voice=voice)

    def export_bundle(self, job: ExportJob) -> Path:
        from .export import export_bundle

        return export_bundle(
            self.model_for(job),
            job.dest,
            job.dtype,
            overwrite=job.overwrite,
            weights_sha256=job.key.weights_sha256,
            graphs=tuple(job.key.graphs),
            precisions=job.key.graphs,
            key=job.key.to_json(),
            info=self.asset_info,
        )

    # -- gate and bench (conversion/core/runs.py) ---------------------------------------------

    def load_model(self, folder: Path, config: Any):
        return weights.load(folder, config)

    def run_gate(self, run: GateRun) -> int:
        """The ladder on the main bundle, then the exported-precision rows (`--precision-rows`:
        the `ar` graph alone at each precision, beside it)."""
        from .gate import precision_bundles, run_gate

        bundle = run.bundle()
        return run_gate(
            run.model,
            bundle,
            run.seed,
            stop_on_fail=run.stop_on_fail,
            json_path=run.json_path,
            markdown=run.markdown,
            precision=precision_bundles(run.source, run.config, run.options.precision_rows),
        )

    def run_mutants(self, run: GateRun):
        """The ladder without the exported-precision rows, each fault against one record."""
        from .mutants import run_mutants

        return run_mutants(run.model, run.bundle(), run.seed, run.mutants)

    def run_bench(self, run: BenchRun) -> int:
        from .bench import run_bench

        return run_bench(
            run.model,
            run.bundle(),
            run.seed,
            run.json_path,
            profile=run.profile,
            workers=run.workers,
            frames=run.options.frames,
            repeats=run.repeats,
        )


PORT = Audio8Port()
