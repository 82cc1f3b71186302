"""Temporarily swap functions on the `torch` module, restoring them even on error.

This is how oracles see (and replay) the publisher's random draws without editing
their code: their `torch.randn_like(x)` looks the name up on `torch` at call time, so
it finds our wrapper. Code that bound the function earlier (`from torch import randn`)
or draws through tensor methods (`x.normal_()`, dropout) is not seen; an oracle for
such code must record those draws itself with `Recorder.record_draw`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch

DEFAULT_RANDOM_FUNCTIONS = (
    "randn",
    "rand",
    "randn_like",
    "rand_like",
    "randint",
    "multinomial",
    "normal",
)

# (name, original) -> the wrapper that replaces it
WrapperFactory = Callable[[str, Callable[..., Any]], Callable[..., Any]]


@contextmanager
def patch_torch_functions(names: Sequence[str], make_wrapper: WrapperFactory) -> Iterator[None]:
    """Replace each `torch.<name>` with `make_wrapper(name, original)` for the block.

    Patches nest: the original saved here is whatever `torch.<name>` was on entry, so a
    capture inside a replay records the replayed values, and both unwind in order.
    """
    originals: dict[str, Callable[..., Any]] = {}
    for name in dict.fromkeys(names):
        original = getattr(torch, name, None)
        if not callable(original):
            raise ValueError(f"torch.{name} is not a torch function")
        originals[name] = original
    try:
        for name, original in originals.items():
            wrapper = make_wrapper(name, original)
            functools.update_wrapper(wrapper, original)
            setattr(torch, name, wrapper)
        yield
    finally:
        for name, original in originals.items():
            setattr(torch, name, original)
