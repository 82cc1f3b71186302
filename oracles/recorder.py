"""Record a publisher model's intermediates and random draws while it runs.

Key conventions (these become the bare keys of `Fixture.intermediates` / `Fixture.draws`):

- A module's output is keyed by its `named_modules()` path. Structured outputs get
  suffixes: tuple/list elements `path.0`, `path.1`; dict entries `path.<key>`; nested
  ones chain (`lstm.1.0` is h_n of an LSTM). Non-tensor elements (None, ints) are skipped.
- Repeated calls: a module that ran once is keyed `path`; a module that ran n > 1 times
  is keyed `path@0` ... `path@<n-1>` (never also plain `path`), with the call suffix
  before any structure suffix (`block.act@1.0`). Keys are settled when `intermediates`
  is read, because only then is the call count known.
- Draws are keyed `<name>/<i>`, counted per name from 0 in call order: `randn_like/0`,
  `sinegen_noise/2`. In a fixture file they are `draws/<name>/<i>`.

Hooks only see modules called through `module(...)`; a direct `module.forward(...)` call
bypasses them (PyTorch's rule, not ours).
"""

from __future__ import annotations

import difflib
import fnmatch
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import Any

import numpy as np
import torch

from oracles.arrays import tensor_to_numpy, widening_note
from oracles.patching import DEFAULT_RANDOM_FUNCTIONS, patch_torch_functions


class DrawLog:
    """Random draws in call order, keyed `<name>/<i>` with a counter per name."""

    def __init__(self) -> None:
        self.draws: dict[str, np.ndarray] = {}
        self._draw_notes: dict[str, str] = {}
        self._counts: dict[str, int] = defaultdict(int)

    @property
    def dtype_notes(self) -> dict[str, str]:
        """Namespaced key -> note, for arrays widened to float32 (merge into fixture meta)."""
        return {f"draws/{key}": widening_note(dtype) for key, dtype in self._draw_notes.items()}

    def record_draw(self, name: str, value: torch.Tensor | np.ndarray) -> str:
        """Store a copy of one draw; returns its key."""
        key = f"{name}/{self._counts[name]}"
        self._counts[name] += 1
        if isinstance(value, torch.Tensor):
            array, widened = tensor_to_numpy(value)
            if widened:
                self._draw_notes[key] = widened
        else:
            array = np.array(value, copy=True)
        self.draws[key] = array
        return key


class Recorder(DrawLog):
    """Context manager that hooks chosen submodules and records their outputs.

    `paths` are exact `named_modules()` names; `patterns` are fnmatch patterns over
    them ("decoder.generator.*"). The root module ("") is never matched by a pattern.
    An unknown path, or a pattern that matches nothing, raises ValueError with the
    nearest names, since a typo would otherwise record nothing and pass silently.
    """

    def __init__(
        self,
        model: torch.nn.Module,
        paths: Sequence[str] | None = None,
        patterns: Sequence[str] | None = None,
    ) -> None:
        super().__init__()
        self.model = model
        self.paths = _select(model, paths or [], patterns or [])
        # per path, per call: suffix -> (array, original dtype name if widened)
        self._calls: dict[str, list[dict[str, tuple[np.ndarray, str | None]]]] = defaultdict(list)
        self._handles: list[torch.utils.hooks.RemovableHandle] = []

    def __enter__(self) -> Recorder:
        modules = dict(self.model.named_modules())
        try:
            for path in self.paths:
                self._handles.append(modules[path].register_forward_hook(self._hook_for(path)))
        except BaseException:
            self._remove_hooks()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._remove_hooks()

    @property
    def intermediates(self) -> dict[str, np.ndarray]:
        """Recorded outputs under their final keys (see the module docstring)."""
        return {key: array for key, (array, _) in self._final_items()}

    @property
    def dtype_notes(self) -> dict[str, str]:
        """Namespaced key -> note, for arrays widened to float32 (merge into fixture meta)."""
        notes = super().dtype_notes
        for key, (_, widened) in self._final_items():
            if widened:
                notes[f"intermediates/{key}"] = widening_note(widened)
        return notes

    def _final_items(self) -> Iterator[tuple[str, tuple[np.ndarray, str | None]]]:
        for path, calls in self._calls.items():
            for i, parts in enumerate(calls):
                prefix = path if len(calls) == 1 else f"{path}@{i}"
                for suffix, item in parts.items():
                    yield prefix + suffix, item

    def call_counts(self) -> dict[str, int]:
        """How many times each hooked module ran while recording."""
        return {path: len(self._calls.get(path, [])) for path in self.paths}

    def _hook_for(self, path: str) -> Any:
        def hook(module: torch.nn.Module, args: Any, output: Any) -> None:
            parts = {suffix: tensor_to_numpy(t) for suffix, t in _flatten(output, "")}
            self._calls[path].append(parts)

        return hook

    def _remove_hooks(self) -> None:
        while self._handles:
            self._handles.pop().remove()


@contextmanager
def capture_random_draws(
    functions: Sequence[str] = DEFAULT_RANDOM_FUNCTIONS, log: DrawLog | None = None
) -> Iterator[dict[str, np.ndarray]]:
    """Record the result of every call to the named torch random functions, in order.

    Yields the draws dict (keys `<fn>/<i>`), filled as the block runs. Pass a Recorder
    (or any DrawLog) as `log` to collect into its `draws` alongside manual draws.
    The originals are restored on exit, also when the block raises.
    """
    log = log if log is not None else DrawLog()

    def make_wrapper(name: str, original: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            log.record_draw(name, result)
            return result

        return wrapper

    with patch_torch_functions(functions, make_wrapper):
        yield log.draws


def _select(model: torch.nn.Module, paths: Sequence[str], patterns: Sequence[str]) -> list[str]:
    names = [name for name, _ in model.named_modules()]
    known = set(names)
    chosen: dict[str, None] = {}
    for path in paths:
        if path not in known:
            raise ValueError(_unknown(f"no module at path {path!r}", path, names))
        chosen[path] = None
    for pattern in patterns:
        hits = [n for n in names if n and fnmatch.fnmatchcase(n, pattern)]
        if not hits:
            raise ValueError(_unknown(f"pattern {pattern!r} matches no module", pattern, names))
        chosen.update(dict.fromkeys(hits))
    return list(chosen)


def _unknown(message: str, wanted: str, names: list[str]) -> str:
    close = difflib.get_close_matches(wanted, [n for n in names if n], n=5, cutoff=0.5)
    hint = f"; close matches: {', '.join(close)}" if close else "; no close matches"
    return f"{message}{hint}"


def _flatten(value: Any, suffix: str) -> Iterator[tuple[str, torch.Tensor]]:
    """(suffix, tensor) for each tensor in a module output, depth first."""
    if isinstance(value, torch.Tensor):
        yield suffix, value
    elif isinstance(value, tuple | list):
        for i, item in enumerate(value):
            yield from _flatten(item, f"{suffix}.{i}")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _flatten(item, f"{suffix}.{key}")
