"""Faults in the S3Gen host steps and graphs that Chatterbox and Chatterbox Turbo share, for
their mutant catalogues (`gates.mutants.Mutant`'s `inject`): each returns a function that, when
called, gives a context manager inside which the shared code has the fault."""

from __future__ import annotations

import numpy as np

from gates.mutants import wrapped

from .flow import host as flow_host
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
