"""`voxport export|gate|bench core`: the toolkit proving itself on its small graphs.

`gate core` exports a mixed-precision bundle of the self-test graphs into a temp folder and
climbs a ladder through the real converter and runtime (in a child process, so a runtime abort
is a failed rung): fp32 parity, fp16 and int8 PSNR, a KV decoder's greedy tokens, the in-graph
sampler against the host sampler, and the conv-basis STFT/iSTFT against torch.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from . import selftest_graphs as sg
from .bundle import BundleWriter
from .dsp import ConvISTFT, ConvSTFT
from .errors import UserError
from .export import FunctionSpec, GraphSpec
from .precision import Precision
from .progress import progress_steps
from .runtime import IsolatedSession, Session
from .sampling import GumbelSampler, SamplingConfig

SAMPLER_VOCAB = 1024
SAMPLER_CONFIG = SamplingConfig(temperature=0.8, top_p=0.95, min_p=0.05, repetition_penalty=1.2)
STFT = {"n_fft": 20, "hop_length": 5}  # Kokoro's generator STFT
STFT_SAMPLES = 2400
BENCH_ROWS = 256  # ~10 ms per call on the Linux runtime (2 cores)


class StftRoundTrip(torch.nn.Module):
    """Waveform -> conv-basis STFT -> magnitude/phase -> conv-basis iSTFT, all in-graph."""

    def __init__(self) -> None:
        super().__init__()
        frames = STFT_SAMPLES // STFT["hop_length"] + 1
        self.stft = ConvSTFT(**STFT, mag_phase=True)
        self.istft = ConvISTFT(**STFT, mag_phase=True, frames=frames, length=STFT_SAMPLES)

    def forward(self, x: torch.Tensor):
        mag, phase = self.stft(x)
        return mag, self.istft(mag, phase)


def test_signal(seed: int) -> np.ndarray:
    """A chirp plus a little noise: every STFT bin sees energy."""
    t = np.arange(STFT_SAMPLES) / 24000.0
    rng = np.random.default_rng(seed)
    chirp = np.sin(2 * np.pi * (200 + 4000 * t) * t)
    return (0.5 * chirp + 0.05 * rng.standard_normal(t.shape)).astype(np.float32)[None]


def graph_specs(seed: int) -> dict[str, tuple[GraphSpec, Precision]]:
    """Every self-test graph with the precision `gate core` checks it at."""
    conv, _ = sg.conv_graph(seed)
    mlp, _ = sg.mlp_graph(seed)
    dec, _ = sg.decoder_graph(seed)
    sampler = GumbelSampler(SAMPLER_VOCAB, SAMPLER_CONFIG)
    sampler_inputs = sampler.example_inputs(batch=1, window=16)
    stft = GraphSpec(
        "stft",
        [
            FunctionSpec(
                "main", StftRoundTrip(), {"x": torch.from_numpy(test_signal(seed))}, ["mag", "y"]
            )
        ],
    )
    return {
        "conv": (conv, Precision.FP32),
        "mlp": (mlp, Precision.FP32),
        "mlp_fp16": (GraphSpec("mlp_fp16", mlp.functions), Precision.FP16),
        "mlp_int8": (GraphSpec("mlp_int8", mlp.functions), Precision.INT8),
        "decoder": (dec, Precision.FP32),
        "decoder_int8": (GraphSpec("decoder_int8", dec.functions, dec.meta), Precision.INT8),
        "sampler": (
            GraphSpec("sampler", [FunctionSpec("main", sampler, sampler_inputs, ["token"])]),
            Precision.FP32,
        ),
        "stft": (stft, Precision.FP32),
    }


def build_bundle(
    dest: Path,
    seed: int,
    precision: Precision | None = None,
    overwrite: bool = True,
    only: list[str] | None = None,
) -> Path:
    """Export the self-test graphs (at their gate precisions, or all at `precision`)."""
    specs = graph_specs(seed)
    if precision is not None:
        specs = {k: (s, precision) for k, (s, p) in specs.items() if p is Precision.FP32}
    if only is not None:
        specs = {k: v for k, v in specs.items() if k in only}
    with (
        progress_steps(len(specs), "export core") as bar,
        BundleWriter(
            dest,
            "core",
            precision=precision or Precision.FP32,
            overwrite=overwrite,
            config={"seed": seed},
        ) as bw,
    ):
        for name, (spec, prec) in specs.items():
            bw.add_graph(spec, precision=prec)
            bar.step(f"{name} ({prec.value})")
    return dest


# -- verbs ----------------------------------------------------------------------------------------


def _reject_weights(args: argparse.Namespace) -> None:
    if getattr(args, "weights", None) not in (None, "random"):
        raise UserError("model 'core' has no weights: its graphs are seeded (--seed)")


def export(args: argparse.Namespace) -> int:
    _reject_weights(args)
    start = time.perf_counter()
    build_bundle(args.output_dir, args.seed, Precision.parse(args.dtype), args.overwrite)
    print(f"wrote {args.output_dir} ({time.perf_counter() - start:.1f} s)")
    return 0


def speak(args: argparse.Namespace) -> int:
    raise UserError("model 'core' has no voice: speak with a TTS model (see `voxport --help`)")


def gate(args: argparse.Namespace) -> int:
    from gates.ladder import run_ladder
    from gates.report import emit

    from .selftest_ladder import core_rungs

    _reject_weights(args)

    with tempfile.TemporaryDirectory(prefix="voxport-core-") as tmp:
        bundle = build_bundle(Path(tmp) / "core", args.seed)
        with IsolatedSession(bundle) as session:
            report = run_ladder(
                "core",
                core_rungs(session, args.seed, plot=args.plot),
                stop_on_fail=args.stop_on_fail,
            )
    emit(report, args.json_path, args.markdown)
    return 0 if report.passed else 1


# -- bench ----------------------------------------------------------------------------------------


def _interleaved_call_times(session: Session, x: np.ndarray, calls: int):
    """Per-call seconds, alternating a bare runtime call and a Session call on one function.

    The bare call is what a user of coreai.runtime writes (an NDArray from the numpy input,
    await the function on an event loop); alternating call by call lets the machine's noise
    fall on both paths alike.
    """
    import coreai

    fn = session.function("mlp", "main")  # the same loaded function the Session calls
    loop = session._loop

    def bare() -> None:
        loop.run_until_complete(fn({"x": coreai.runtime.NDArray(x)}))["y"].numpy()

    def wrapped_call() -> None:
        session.run("mlp", "main", {"x": x})

    raw: list[float] = []
    wrapped: list[float] = []
    wrapped_call()
    for i in range(calls):
        pair = [(bare, raw), (wrapped_call, wrapped)]
        if i % 2:  # alternate which goes first: no path always runs on a warmer cache
            pair.reverse()
        for call, times in pair:
            t = time.perf_counter()
            call()
            times.append(time.perf_counter() - t)
    return raw, wrapped


def bench(args: argparse.Namespace) -> int:
    """Session overhead vs the raw runtime on a ~10 ms graph, and self-test export time."""
    from gates.report import bench_table_markdown

    from .cli import write_json

    _reject_weights(args)
    repeats = args.repeats or 40
    rounds = 5
    figures: dict[str, float | int | str] = {}
    with tempfile.TemporaryDirectory(prefix="voxport-bench-") as tmp:
        t = time.perf_counter()
        conv, _ = sg.conv_graph(args.seed)
        with BundleWriter(Path(tmp) / "conv", "core", overwrite=True) as bw:
            bw.add_graph(conv)
        figures["export_conv_selftest_s"] = round(time.perf_counter() - t, 3)

        # An MLP sized to take ~10 ms per call on the Linux runtime.
        mlp, inputs = sg.mlp_graph(args.seed, rows=BENCH_ROWS)
        bundle = Path(tmp) / "mlp"
        with BundleWriter(bundle, "core", overwrite=True) as bw:
            bw.add_graph(mlp)
        x = inputs["x"].numpy()
        raw, wrapped = [], []
        with Session(bundle) as session, progress_steps(rounds, "bench core") as bar:
            for i in range(rounds):
                r, w = _interleaved_call_times(session, x, repeats)
                raw += r
                wrapped += w
                bar.step(f"round {i + 1}: {repeats} call pairs")
    raw_ms = statistics.median(raw) * 1e3
    ses_ms = statistics.median(wrapped) * 1e3
    figures.update(
        {
            "graph": f"mlp [{BENCH_ROWS}, 256] -> 512 -> 256, fp32",
            "calls_per_path": rounds * repeats,
            "raw_runtime_ms_median": round(raw_ms, 4),
            "session_ms_median": round(ses_ms, 4),
            "session_overhead_ms": round(ses_ms - raw_ms, 4),
            "session_overhead_pct": round(100 * (ses_ms - raw_ms) / raw_ms, 2),
            "raw_runtime_ms_p10": round(float(np.percentile(raw, 10)) * 1e3, 4),
            "session_ms_p10": round(float(np.percentile(wrapped, 10)) * 1e3, 4),
        }
    )
    print(bench_table_markdown(figures))
    write_json(args.json_path, figures)
    return 0
