"""Kokoro's mutation-tested gate: faults a new user's bug would put into the port, and the
ladder that must catch each one (`gates/mutants.py`).

Every fault lives in voxport's code, never in the publisher's `kokoro` package (the oracle):
a host step replaced for as long as the fault is open (`_patched`), or a graph's torch code
changed while that one graph is re-exported at its smallest bucket into a copy of the
baseline bundle (`mutated_bundle`, through the project's `BundleWriter`, so the copy verifies
like any bundle). The oracle's record is made once (`gate.record_cases`); each fault reruns
the same ladder (`gate.evaluate_bundle`) against it, with the bundle side's inputs taken from
the broken port (`gate.port_cases`).

`REDUCED` is what CI runs (`tests/kokoro/test_mutants.py`): the host faults and one graph
fault, a graph's re-export costing a minute or so on this machine.
"""

from __future__ import annotations

import functools
import hashlib
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch

from conversion.core.bundle import BundleWriter, load_manifest
from conversion.core.host.buckets import BucketTable
from gates.ladder import LadderReport
from gates.mutants import KillTable, Mutant, run_catalogue

from . import alignment, graphs, host, pipeline, source, voice
from .layers import istft
from .text import chunks, timings

# ------------------------------------------------------------------------------ patching


@contextmanager
def _patched(owner: Any, name: str, make: Callable[[Any], Any]) -> Iterator[None]:
    """`owner.name` replaced by `make(original)` while open, put back on exit (always)."""
    original = getattr(owner, name)
    setattr(owner, name, make(original))
    try:
        yield
    finally:
        setattr(owner, name, original)


def _fault(owner: Any, name: str, make: Callable[[Any], Any]):
    """A Mutant's `inject`: a fresh context manager each time it is called."""
    return lambda: _patched(owner, name, make)


# ----------------------------------------------------------------------------- host faults


def _drop_stress(original):
    # A "cleanup" of the phoneme string that also drops misaki's stress marks.
    def tokens_phonemes(tokens):
        return original(tokens).replace("ˈ", "").replace("ˌ", "")

    return tokens_phonemes


def _row_n(original):
    # pack[n] where the publisher reads pack[len(ps) - 1].
    def ref_s_for(pack, n_phonemes):
        return np.asarray(pack, np.float32).reshape(voice.PACK_SHAPE)[n_phonemes].copy()

    return ref_s_for


def _truncated(original):
    # int() of the duration sums: truncation where the publisher rounds half to even.
    def pred_durations(durations, speed=1.0):
        d = np.asarray(durations, np.float32).reshape(-1) / np.float32(speed)
        return np.maximum(d.astype(np.int64), 1)

    return pred_durations


def _shifted_frames(original):
    # Every frame one later than its token's: frame j belongs to the token of frame j - 1.
    def alignment_matrix(pred_dur):
        aln = original(pred_dur)
        out = np.zeros_like(aln)
        out[..., 1:] = aln[..., :-1]
        out[..., 0, 0] = 1.0
        return out

    return alignment_matrix


def _replicate_pad(original):
    return functools.partial(original, pad_mode="replicate")


def _symmetric_hann(original):
    # numpy's hanning is the symmetric window; torch.hann_window (the publisher's) periodic.
    return lambda n, periodic=True: np.hanning(n)


def _conjugate(original):
    def magnitude_phase(spec):
        mag, phase = original(spec)
        return mag, -phase

    return magnitude_phase


def _f0_as_fp16(original):
    # F0 handed to the host source in float16 (an fp16 output not widened): the phase is
    # a cumulative sum to ~1e5 rad, where float32 is required.
    def f0_samples(F0, cfg):  # noqa: N803 (the publisher's name)
        return original(np.asarray(F0, np.float32).astype(np.float16).astype(np.float32), cfg)

    return f0_samples


def _stride_blind(original):
    # A copy that reads an array's memory as if it were C-contiguous: right for a fresh
    # array, wrong for a slice of a bucket's output (t_en[:, :, :T]) or a transposed layout.
    def pad_to(x, size, axis=-1, value=0):
        x = np.asarray(x)
        if not x.flags.c_contiguous:
            base = x
            while isinstance(base.base, np.ndarray):
                base = base.base
            start = x.__array_interface__["data"][0] - base.__array_interface__["data"][0]
            inside = base.flags.c_contiguous or base.flags.f_contiguous
            if not inside or min(x.strides) < 0 or start < 0 or start + x.nbytes > base.nbytes:
                raise ValueError("the stride-blind copy would read outside the array's memory")
            c_strides = np.empty(x.shape, x.dtype).strides
            x = np.lib.stride_tricks.as_strided(x, x.shape, c_strides).copy()
        return original(x, size, axis, value)

    return pad_to


# ---------------------------------------------------------------------------- graph faults


def _forward_with(cls: type, change: Callable[[dict[str, torch.Tensor]], None]):
    """`cls.forward` called with some inputs changed (by name)."""
    names = cls.INPUTS

    def make(original):
        def forward(self, *args, **named):
            kwargs = {**dict(zip(names, args, strict=False)), **named}
            change(kwargs)
            return original(self, **kwargs)

        return forward

    return make


def _zeros(name: str) -> Callable[[dict[str, torch.Tensor]], None]:
    def change(kwargs):
        kwargs[name] = torch.zeros_like(kwargs[name])

    return change


def _one_frame_short(kwargs):
    kwargs["n_frames"] = kwargs["n_frames"] - 1


def _istft_phase_sign(original):
    def forward(self, magnitude, phase, frames, samples):
        return original(self, magnitude, -phase, frames, samples)

    return forward


# -------------------------------------------------------------------------------- catalogue

CATALOGUE: tuple[Mutant, ...] = (
    Mutant(
        "g2p-drops-stress",
        "voxport's phoneme strings lose misaki's stress marks (ˈ ˌ)",
        _fault(chunks, "tokens_phonemes", _drop_stress),
    ),
    Mutant(
        "timings-no-lead-in",
        "word timings count the first pad's frames whole (the publisher's 3-frame lead-in dropped)",
        _fault(timings, "LEAD_IN_FRAMES", lambda _original: 0),
    ),
    Mutant(
        "voice-row-off-by-one",
        "the voice row is pack[len(ps)], not the publisher's pack[len(ps) - 1]",
        _fault(host, "ref_s_for", _row_n),
    ),
    Mutant(
        "durations-truncated",
        "frames per token truncated, not rounded (a duration off by one)",
        _fault(host, "pred_durations", _truncated),
    ),
    Mutant(
        "alignment-frame-shift",
        "the alignment puts every frame one later (frame j to the token of frame j - 1)",
        _fault(alignment, "alignment_matrix", _shifted_frames),
    ),
    Mutant(
        "stft-replicate-pad",
        "the host STFT of the harmonic source pads by replicate, not reflect",
        _fault(source, "stft", _replicate_pad),
    ),
    Mutant(
        "stft-symmetric-window",
        "the host STFT's window is numpy's symmetric hanning, not torch's periodic Hann",
        _fault(source, "hann_window", _symmetric_hann),
    ),
    Mutant(
        "stft-phase-sign",
        "the host STFT's phase has its sign flipped (the conjugate spectrum)",
        _fault(source, "magnitude_phase", _conjugate),
    ),
    Mutant(
        "source-f0-fp16",
        "F0 reaches the host harmonic source in float16 where float32 is required",
        _fault(source, "_f0_samples", _f0_as_fp16),
    ),
    Mutant(
        "stride-blind-copy",
        "the host's bucket padding reads a sliced graph output as if it were contiguous",
        _fault(pipeline, "pad_to", _stride_blind),
    ),
    Mutant(
        "vocoder-ignores-har",
        "the vocoder graph drops its harmonic source input (har as zeros)",
        _fault(graphs.Vocoder, "forward", _forward_with(graphs.Vocoder, _zeros("har"))),
        graph="vocoder",
    ),
    Mutant(
        "vocoder-ignores-style",
        "the vocoder graph ignores the voice (ref_s as zeros)",
        _fault(graphs.Vocoder, "forward", _forward_with(graphs.Vocoder, _zeros("ref_s"))),
        graph="vocoder",
    ),
    Mutant(
        "istft-phase-sign",
        "the vocoder's in-graph iSTFT takes the phase with its sign flipped",
        _fault(istft.MaskedISTFT, "forward", _istft_phase_sign),
        graph="vocoder",
    ),
    Mutant(
        "predictor-ignores-voice",
        "the predictor graph ignores the voice (ref_s as zeros)",
        _fault(graphs.Predictor, "forward", _forward_with(graphs.Predictor, _zeros("ref_s"))),
        graph="predictor",
    ),
    Mutant(
        "prosody-mask-one-frame-short",
        "the prosody graph's real-frame mask is one frame short (n_frames - 1)",
        _fault(graphs.Prosody, "forward", _forward_with(graphs.Prosody, _one_frame_short)),
        graph="prosody",
    ),
)
# CI's: every host fault, and one graph fault: the prosody graph's, the cheapest to
# re-export (~45 s against a minute or more for the predictor and the vocoder).
REDUCED: tuple[Mutant, ...] = tuple(
    m for m in CATALOGUE if m.graph is None or m.name == "prosody-mask-one-frame-short"
)

# --------------------------------------------------------------------------- the evaluation


def mutated_bundle(baseline: Path, kmodel: torch.nn.Module, graph: str, dest: Path) -> Path:
    """A copy of `baseline` with `graph` re-exported from `kmodel` as the torch code is now,
    at its smallest bucket only; the other graphs and host files copied as they are. Written
    by `BundleWriter` (manifest, hashes), so it loads and verifies like any bundle."""
    manifest = load_manifest(baseline)
    entries = manifest.graphs
    table = BucketTable(entries[graph]["meta"]["buckets"])
    smallest = BucketTable([min(table, key=lambda b: b.volume)])
    (spec,) = graphs.graph_specs(kmodel, {graph: smallest}, (graph,))
    config = dict(manifest.config)
    config["buckets"] = {**config.get("buckets", {}), graph: smallest.to_json()}
    with BundleWriter(
        dest,
        "kokoro",
        precision=manifest.precision,
        weights_sha256=manifest.weights_sha256,
        config=config,
        key=manifest.key,
    ) as writer:
        for name, entry in entries.items():
            if name == graph:
                writer.add_graph(spec)
            else:
                shutil.copytree(baseline / entry["asset"], writer.staging / entry["asset"])
                writer.graphs[name] = dict(entry)
        for name in manifest.meta.get("files", {}):
            writer.add_file(baseline / name)
    return dest


def _digest(inputs: Mapping[str, Any]) -> str:
    h = hashlib.sha256()
    for name in sorted(inputs):
        a = np.ascontiguousarray(inputs[name])
        h.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.tobytes())
    return h.hexdigest()


class BaselineCalls:
    """The graph calls of the baseline's ladder, answered again when a fault's ladder makes
    a byte-identical one (same asset hash, function and inputs): the runtime is
    deterministic (the ladder's bit-identical rung), so only the calls a fault changes run.
    Calls are recorded during the baseline only, never served within it, and a call first
    made under a fault always runs (so that ladder's bit-identical rung compares two runs)."""

    def __init__(self) -> None:
        self.outputs: dict[tuple[str, str, str], dict[str, np.ndarray]] = {}
        self.recording = True
        self.served = 0

    def attach(self, pipeline) -> None:
        hashes = {g: e["sha256"] for g, e in pipeline.manifest.graphs.items()}
        pipeline.session = _Replaying(pipeline.session, self, hashes)


class _Replaying:
    def __init__(self, inner, calls: BaselineCalls, hashes: dict[str, str]) -> None:
        self.inner, self.calls, self.hashes = inner, calls, hashes

    def run(self, graph: str, function: str, inputs: Mapping[str, Any], state="default"):
        key = (self.hashes[graph], function, _digest(inputs))
        if not self.calls.recording and key in self.calls.outputs:
            self.calls.served += 1
            return {k: v.copy() for k, v in self.calls.outputs[key].items()}
        out = self.inner.run(graph, function, inputs, state)
        if self.calls.recording:
            self.calls.outputs[key] = {k: np.array(v, copy=True) for k, v in out.items()}
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class KokoroMutantRun:
    """The catalogue's `evaluate`: the oracle's `cases` recorded once, the baseline bundle
    (loaded once, for the baseline and every host fault; closed by `close`), and the weights
    a graph fault is re-exported from.

    `quick` is CI's cheap mode: each ladder stops at its first failing rung and leaves out
    the other buckets' rungs and the speech rungs (ASR, speaker), the full ladder's costliest;
    the CLI runs every rung. Either way the baseline's graph calls are replayed
    (`BaselineCalls`) where a fault leaves them byte-identical.
    """

    def __init__(
        self, kmodel: torch.nn.Module, baseline: Path, cases: list, quick: bool = False
    ) -> None:
        self.kmodel, self.baseline, self.cases = kmodel, Path(baseline), cases
        self.quick = quick
        self.calls = BaselineCalls()
        self._loaded: pipeline.KokoroPipeline | None = None

    def ladder(self, bundle: pipeline.KokoroPipeline) -> LadderReport:
        from .gate import evaluate_bundle

        bundle.between_utterances()  # a long-lived runtime child gives its leaked buffers back
        return evaluate_bundle(
            bundle,
            self.cases,
            stop_at_first_failure=self.quick,
            speech=not self.quick,
            every_bucket=not self.quick,
        )

    def baseline_bundle(self) -> pipeline.KokoroPipeline:
        if self._loaded is None:
            self._loaded = pipeline.KokoroPipeline(self.baseline, isolate=True)
            self.calls.attach(self._loaded)
        return self._loaded

    def __call__(self, mutant: Mutant | None) -> LadderReport:
        if mutant is None:
            self.calls.recording = True
            try:
                return self.ladder(self.baseline_bundle())
            finally:
                self.calls.recording = False
        with mutant.inject():
            if mutant.graph is None:
                return self.ladder(self.baseline_bundle())
            with tempfile.TemporaryDirectory(prefix="voxport-kokoro-mutant-") as tmp:
                folder = mutated_bundle(self.baseline, self.kmodel, mutant.graph, Path(tmp) / "b")
                with pipeline.KokoroPipeline(folder, isolate=True) as mutated:
                    self.calls.attach(mutated)
                    return self.ladder(mutated)

    def close(self) -> None:
        if self._loaded is not None:
            self._loaded.close()
            self._loaded = None


def run_mutants(
    kmodel: torch.nn.Module, baseline: Path, cases: list, mutants, quick: bool = False
) -> KillTable:
    """The kill table of `mutants` against the recorded oracle `cases` and `baseline`."""

    def announce(i: int, n: int, m: Mutant) -> None:
        print(f"[kokoro mutants] {i}/{n} {m.name} ({m.where}): {m.fault}", flush=True)

    run = KokoroMutantRun(kmodel, baseline, cases, quick=quick)
    try:
        return run_catalogue("kokoro", mutants, run, on_mutant=announce)
    finally:
        run.close()
