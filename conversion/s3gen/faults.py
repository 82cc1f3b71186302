"""Faults in the S3Gen host steps and graphs that Chatterbox and Chatterbox Turbo share, for
their mutant catalogues (`gates.mutants.Mutant`'s `inject`): each returns a function that, when
called, gives a context manager inside which the shared code has the fault. `s3gen_mutants`
gives the catalogue entries both models list the same way (each catalogue picks its own and
keeps its own order: kill tables are compared by name), and `mutant_bundle` the copy of a
bundle a graph fault runs on.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from conversion.core.export.graph_swap import bundle_with_graph
from gates.mutants import Mutant, wrapped

from .flow import graphs as flow_graphs
from .flow import host as flow_host
from .hift import graphs as hift_graphs
from .hift import host as hift_host


def schedule(steps_delta: int = 0, cosine: bool | None = None):
    def make(original):
        return lambda n, c=True: original(n + steps_delta, c if cosine is None else cosine)

    return wrapped(flow_host, "t_schedule", make)


def mask_longer():
    def make(original):
        return lambda length, size, *a, **k: original(min(int(length) + 1, size), size, *a, **k)

    return wrapped(flow_host, "length_mask", make)


# ---------------------------------------------------------------------------- HiFT (host)


def stft_pad(mode: str):
    def make(original):
        return lambda *a, **k: original(*a, **{**k, "pad_mode": mode})

    return wrapped(hift_host, "stft", make)


def istft(window: str | None = None, hop_delta: int = 0, conjugate: bool = False):
    def make(original):
        def faulty(spec, n_fft, hop, win_length=None, window_=None, **k):
            w = k.pop("window", window_)
            if window == "symmetric":
                w = np.hanning(n_fft).astype(np.float32)  # periodic Hann is the publisher's
            return original(np.conj(spec) if conjugate else spec, n_fft, hop + hop_delta,
                            win_length, window=w, **k)  # fmt: skip

        return faulty

    return wrapped(hift_host, "istft", make)


def fp16_running_phase():
    """SineGen's running phase (cumsum over ~10k samples of f0/sr) computed in float16."""

    def make(original):
        def faulty(x, dim, *a, **k):
            return original(x.half(), dim, *a, **k).float()

        return faulty

    return wrapped(hift_host.torch, "cumsum", make)


def stride_blind_pad():
    """The vocoder's pad copies a strided view (the flow's mel after its prompt frames) as if
    it were contiguous: the bytes from the view's start, read row after row."""

    def make(original):
        def faulty(x, size, axis=-1, *a, **k):
            x = np.asarray(x)
            if x.ndim == 3 and not x.flags.c_contiguous:
                strides = np.empty(x.shape, x.dtype).strides
                x = np.lib.stride_tricks.as_strided(x, x.shape, strides).copy()
            return original(x, size, axis, *a, **k)

        return faulty

    return wrapped(hift_host, "pad_to", make)


# ---------------------------------------------------------------------------------- graphs


def graph_input_zeroed(cls: type, argument: str):
    """A graph whose forward ignores one input (times zero inside the graph: the input stays
    an input of the exported function)."""
    import inspect

    names = list(inspect.signature(cls.forward).parameters)[1:]
    index = names.index(argument)

    def make(original):
        def faulty(self, *args, **kwargs):
            args = list(args)
            if argument in kwargs:
                kwargs[argument] = kwargs[argument] * 0
            else:
                args[index] = args[index] * 0
            return original(self, *args, **kwargs)

        return faulty

    return wrapped(cls, "forward", make)


# ------------------------------------------------------------------------ voice file (host)


def voice_file_mel_late(voice_class: type) -> Mutant:
    """The voice writer (`voice_class.save`) stores the S3Gen prompt mel one frame late (rolled
    along time)."""

    def make(original):
        def faulty(self, path):
            late = dataclasses.replace(self, prompt_feat=np.roll(self.prompt_feat, 1, axis=1))
            return original(late, path)

        return faulty

    return Mutant(
        "voice-file-mel-one-frame-late",
        "the voice file stores the S3Gen prompt mel one frame late",
        wrapped(voice_class, "save", make),
    )


# ------------------------------------------------------------------------ catalogue entries

# name -> (fault, inject maker, graph): made when asked for, since a graph input is looked up
# in the graph's signature (Turbo's estimator takes `r`, Chatterbox's calls leave it out)
_ENTRIES: dict[str, tuple[str, Callable[[], Callable[[], Any]], str | None]] = {
    "cfm-mask-off-by-one": (
        "the estimator's mask one frame longer than the real frames",
        mask_longer,
        None,
    ),
    "stft-replicate-pad": (
        "the source STFT pads by replication, not reflection",
        lambda: stft_pad("replicate"),
        None,
    ),
    "istft-symmetric-window": (
        "iSTFT with a symmetric Hann, not periodic",
        lambda: istft("symmetric"),
        None,
    ),
    "istft-hop": ("iSTFT hop 5 instead of 4", lambda: istft(hop_delta=1), None),
    "istft-phase-sign": ("iSTFT of exp(-i phase)", lambda: istft(conjugate=True), None),
    "source-phase-fp16": (
        "the harmonic source's running phase summed in float16",
        fp16_running_phase,
        None,
    ),
    "vocoder-stride-blind-copy": (
        "the vocoder's pad reads the flow mel view as contiguous",
        stride_blind_pad,
        None,
    ),
    "hift-trunk-ignores-mel": (
        "the HiFT trunk graph ignores its mel (zeroed)",
        lambda: graph_input_zeroed(hift_graphs.Trunk, "mel"),
        hift_graphs.TRUNK_GRAPH,
    ),
    "encoder-ignores-tokens": (
        "the flow encoder graph ignores its speech tokens (all id 0)",
        lambda: graph_input_zeroed(flow_graphs.FlowEncoder, "tokens"),
        flow_graphs.ENCODER_GRAPH,
    ),
    "estimator-ignores-spks": (
        "the flow estimator graph ignores the speaker embedding",
        lambda: graph_input_zeroed(flow_graphs.FlowEstimator, "spks"),
        flow_graphs.ESTIMATOR_GRAPH,
    ),
    "estimator-ignores-cond": (
        "the CFM estimator graph ignores the prompt mel (cond)",
        lambda: graph_input_zeroed(flow_graphs.FlowEstimator, "cond"),
        flow_graphs.ESTIMATOR_GRAPH,
    ),
    "estimator-ignores-mu": (
        "the CFM estimator graph ignores the encoder output (mu)",
        lambda: graph_input_zeroed(flow_graphs.FlowEstimator, "mu"),
        flow_graphs.ESTIMATOR_GRAPH,
    ),
    "estimator-ignores-r": (
        "the mean-flow estimator graph ignores r (zeroed)",
        lambda: graph_input_zeroed(flow_graphs.FlowEstimator, "r"),
        flow_graphs.ESTIMATOR_GRAPH,
    ),
}


def s3gen_mutants(*names: str) -> tuple[Mutant, ...]:
    """The shared S3Gen catalogue entries `names`, in that order."""
    unknown = [n for n in names if n not in _ENTRIES]
    if unknown:
        raise ValueError(f"no shared S3Gen fault {unknown}: known are {', '.join(_ENTRIES)}")
    return tuple(
        Mutant(name, _ENTRIES[name][0], _ENTRIES[name][1](), graph=_ENTRIES[name][2])
        for name in names
    )


# ---------------------------------------------------------------------- a graph fault's bundle

# the config field holding each graph's buckets (a graph fault re-exports the smallest)
BUCKETS = {
    "t3": "prefill_buckets",
    "flow_encoder": "encoder_tokens",
    "flow_estimator": "estimator_frames",
    "hift_f0": "vocoder_frames",
    "hift_trunk": "vocoder_frames",
}


def mutant_bundle(setup: Any, graph: str, dest: Path, export: Any) -> Path:
    """A copy of the gate's baseline bundle (`setup.bundle`, exported at `setup.sizes`) with
    `graph` re-exported by the model's `export._spec` (as the port's torch code now is) at its
    smallest bucket, written at `dest`."""
    field = BUCKETS[graph]
    sizes = dataclasses.replace(setup.sizes, **{field: (min(getattr(setup.sizes, field)),)})
    spec = export._spec(setup.model, sizes, graph)
    return bundle_with_graph(setup.bundle, spec, sizes.to_json(), dest, export.ASSET_INFO)
