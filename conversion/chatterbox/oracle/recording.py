"""The oracle's recording helpers and the speech-token ids every stage shares.

Torch-function patches and the swapped conditionals each stage's recorder installs for one
block and removes on exit (hooks, method wrappers and `to_numpy`: `oracles/hooks.py`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from chatterbox.tts import ChatterboxTTS


PACKAGES = ("chatterbox-tts", "transformers", "librosa", "resemble-perth")
START_SPEECH, STOP_SPEECH, SPEECH_VOCAB = 6561, 6562, 6561


@contextlib.contextmanager
def _torch_function(name: str, replacement: Callable[..., Any]) -> Iterator[None]:
    original = getattr(torch, name)
    setattr(torch, name, replacement)
    try:
        yield
    finally:
        setattr(torch, name, original)


@contextlib.contextmanager
def _swapped_conds(model: ChatterboxTTS, conds: Any) -> Iterator[None]:
    saved = model.conds
    model.conds = conds
    try:
        yield
    finally:
        model.conds = saved
