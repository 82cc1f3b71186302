"""What an oracle installs in the publisher's model for one block and removes on exit: forward
hooks (`forward_hooks`), a method shadowed on one instance (`wrap_method`), and `to_numpy`, which
copies what a hook sees. Shared by every model's oracle (Chatterbox's, Chatterbox Turbo's)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import torch


def to_numpy(t: Any) -> np.ndarray:
    return t.detach().cpu().clone().numpy() if torch.is_tensor(t) else np.array(t, copy=True)


@contextlib.contextmanager
def forward_hooks() -> Iterator[Callable[..., None]]:
    """Yields `add(module, hook, pre=False, kwargs=False)`; every hook is removed on exit."""
    handles: list[Any] = []

    def add(module: torch.nn.Module, hook: Any, pre: bool = False, kwargs: bool = False) -> None:
        if pre:
            handles.append(module.register_forward_pre_hook(hook, with_kwargs=kwargs))
        else:
            handles.append(module.register_forward_hook(hook))

    try:
        yield add
    finally:
        for h in handles:
            h.remove()


@contextlib.contextmanager
def wrap_method(obj: Any, name: str, wrapper: Callable[[Callable[..., Any]], Any]) -> Iterator:
    """Set `obj.<name>` (an instance attribute shadowing the method) for the block."""
    original = getattr(obj, name)
    had_own = name in vars(obj)
    setattr(obj, name, wrapper(original))
    try:
        yield
    finally:
        if had_own:
            setattr(obj, name, original)
        else:
            delattr(obj, name)
