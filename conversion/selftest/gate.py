"""The rungs of `voxport gate core`: each compares eager torch with the Core AI runtime."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import torch

from conversion.core.host.sampling import sample
from conversion.core.runtime.isolated_session import IsolatedSession
from gates.ladder import Rung, run_ladder
from gates.report import emit

from . import graphs as sg
from .export import build_bundle
from .graphs import SAMPLER_CONFIG, SAMPLER_VOCAB, STFT, STFT_SAMPLES, test_signal

PROMPT = [3, 14, 15, 9, 2, 6, 5, 35]
DECODE_STEPS = 16
SAMPLER_SETS = 100


@torch.no_grad()
def _eager(module: torch.nn.Module, inputs: dict[str, torch.Tensor]) -> np.ndarray:
    return module.eval()(*inputs.values()).numpy()


def _runtime(session, graph: str, inputs: dict[str, torch.Tensor], out: str) -> np.ndarray:
    return session.run(graph, "main", {k: v.numpy() for k, v in inputs.items()})[out]


def _conv_rungs(session, seed: int) -> list[Rung]:
    conv_spec, conv_in = sg.conv_graph(seed)
    conv = conv_spec.functions[0].module

    def conv_pair():
        return _eager(conv, conv_in), _runtime(session, "conv", conv_in, "y")

    return [
        Rung("conv+elu fp32 max|Δ|", "max_abs", 1e-5, conv_pair),
        Rung("conv+elu fp32 cosine", "cosine", 0.99999, conv_pair),
    ]


def _mlp_rungs(session, seed: int) -> list[Rung]:
    mlp_spec, mlp_in = sg.mlp_graph(seed)
    mlp = mlp_spec.functions[0].module

    def mlp_pair(graph: str):
        def compute():
            ref = _eager(mlp, mlp_in)
            cand = _runtime(session, graph, mlp_in, "y").astype(np.float32)
            return ref, cand

        return compute

    return [
        Rung("mlp fp32 max|Δ|", "max_abs", 1e-5, mlp_pair("mlp")),
        Rung("mlp fp16 PSNR", "psnr", 50.0, mlp_pair("mlp_fp16")),
        Rung("mlp int8 PSNR", "psnr", 40.0, mlp_pair("mlp_int8")),
    ]


def _decoder_rungs(session, seed: int) -> list[Rung]:
    """Greedy decoding, eager vs runtime; the eager run is shared, the logits kept per graph."""
    _, decoder = sg.decoder_graph(seed)
    cache: dict[str, object] = {}

    def greedy(graph: str):
        def compute():
            if "eager" not in cache:
                cache["eager"] = sg.greedy_eager(decoder, PROMPT, DECODE_STEPS)
            ref_tokens, ref_logits = cache["eager"]
            tokens, logits = sg.greedy_runtime(session, PROMPT, DECODE_STEPS, graph)
            cache[graph] = (ref_logits, logits)
            return ref_tokens, tokens

        return compute

    def decoder_logits():
        if "decoder" not in cache:
            greedy("decoder")()
        ref, cand = cache["decoder"]
        return np.stack(ref), np.stack(cand)

    return [
        Rung("kv decoder fp32 greedy tokens", "token_agreement", 1.0, greedy("decoder")),
        Rung("kv decoder fp32 logits max|Δ|", "max_abs", 1e-4, decoder_logits),
        Rung("kv decoder int8 greedy tokens", "token_agreement", 1.0, greedy("decoder_int8")),
    ]


def _sampler_rung(session, seed: int) -> Rung:
    def sampler_pair():
        rng = np.random.default_rng(seed)
        host, graph = [], []
        for _ in range(SAMPLER_SETS):
            logits = (rng.standard_normal((1, SAMPLER_VOCAB)) * 3).astype(np.float32)
            u = rng.uniform(1e-6, 1 - 1e-6, (1, SAMPLER_VOCAB)).astype(np.float32)
            prev = rng.integers(-1, SAMPLER_VOCAB, (1, 16)).astype(np.int32)
            host.append(int(sample(logits, u, SAMPLER_CONFIG, prev)[0]))
            feed = {"logits": logits, "uniforms": u, "previous_tokens": prev}
            graph.append(int(session.run("sampler", "main", feed)["token"][0]))
        return host, graph

    return Rung("sampler graph vs host (100 draws)", "token_agreement", 1.0, sampler_pair)


def _stft_rungs(session, seed: int, plot: Path | None) -> list[Rung]:
    """The conv STFT's magnitude and its iSTFT roundtrip against torch (and the plot)."""

    def stft_pair():
        x = test_signal(seed)
        ref = torch.istft(
            torch.stft(
                torch.from_numpy(x),
                **STFT,
                window=torch.hann_window(STFT["n_fft"]),
                return_complex=True,
            ),
            **STFT,
            window=torch.hann_window(STFT["n_fft"]),
            length=STFT_SAMPLES,
        ).numpy()
        cand = session.run("stft", "main", {"x": x})["y"]
        if plot is not None:
            from gates.plot import plot_waveforms

            plot_waveforms(
                ref[0], cand[0], 24000, plot, "core: torch.istft(stft) vs graph", n_fft=64, hop=16
            )
        return ref, cand

    def stft_mag_pair():
        x = torch.from_numpy(test_signal(seed))
        ref = (
            torch.stft(x, **STFT, window=torch.hann_window(STFT["n_fft"]), return_complex=True)
            .abs()
            .numpy()
        )
        return ref, session.run("stft", "main", {"x": x.numpy()})["mag"]

    return [
        Rung("conv STFT magnitude vs torch.stft", "max_abs", 1e-4, stft_mag_pair),
        Rung("conv iSTFT roundtrip vs torch.istft", "max_abs", 1e-4, stft_pair),
    ]


def core_rungs(session, seed: int, plot: Path | None = None) -> list[Rung]:
    """Rungs over a bundle built by `selftest.build_bundle` and loaded in `session`."""
    return [
        *_conv_rungs(session, seed),
        *_mlp_rungs(session, seed),
        *_decoder_rungs(session, seed),
        _sampler_rung(session, seed),
        *_stft_rungs(session, seed, plot),
    ]


def run_gate(
    seed: int,
    plot: Path | None = None,
    stop_on_fail: bool = False,
    json_path: Path | None = None,
    markdown: Path | None = None,
) -> int:
    """Export the self-test bundle into a temp folder and climb the ladder in a child process."""
    with tempfile.TemporaryDirectory(prefix="voxport-core-") as tmp:
        bundle = build_bundle(Path(tmp) / "core", seed)
        with IsolatedSession(bundle) as session:
            report = run_ladder("core", core_rungs(session, seed, plot=plot), stop_on_fail)
    emit(report, json_path, markdown)
    return 0 if report.passed else 1
