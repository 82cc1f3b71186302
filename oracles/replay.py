"""Re-run the publisher's code with the exact random draws a fixture recorded.

Our exported graphs take noise as inputs; to compare them with the publisher's model
we must feed both the same noise. Replaying the recorded draws into the publisher's
own torch calls makes its run deterministic without editing its code.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch

from oracles.arrays import is_array_like, tensor_to_numpy
from oracles.fixture import Fixture
from oracles.patching import DEFAULT_RANDOM_FUNCTIONS, patch_torch_functions


class ReplayError(RuntimeError):
    """The code asked for a different draw than the one recorded (or for more, or fewer)."""


@contextmanager
def replay_random_draws(
    draws: Mapping[str, np.ndarray | torch.Tensor],
    strict: bool = True,
    functions: Sequence[str] | None = None,
) -> Iterator[dict[str, int]]:
    """Make each call to a torch random function return its next recorded draw.

    `draws` is keyed `<fn>/<i>` as `capture_random_draws` writes it (a leading
    "draws/" is accepted, so a fixture's flat arrays work too). Calls to torch.<fn>
    consume `<fn>/0`, `<fn>/1`, ... in order. Keys whose `<fn>` is not a torch function
    (draws an oracle logged by hand with `record_draw`) are ignored here.

    The original function still runs and its result is overwritten in place: torch's
    own argument parsing then fixes the requested shape, dtype, device and strides
    for every overload (randint's, normal's), and the global generator advances as it
    did in the recorded run, so unpatched draws after it stay in step when seeded alike.

    With `strict`, leaving the block with recorded draws unused raises ReplayError
    (unless the block is already raising). Yields a live count of calls per function.
    """
    queues = _queues(draws)
    names = list(functions) if functions is not None else list(DEFAULT_RANDOM_FUNCTIONS)
    if functions is None:
        names += [n for n in queues if n not in names and callable(getattr(torch, n, None))]
    used: dict[str, int] = dict.fromkeys(names, 0)

    def make_wrapper(name: str, original: Any) -> Any:
        queue = queues.get(name, [])

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            index = used[name]
            if index >= len(queue):
                raise ReplayError(
                    f"torch.{name} call {index}: no recorded draw left "
                    f"({len(queue)} recorded for {name!r})"
                )
            result = original(*args, **kwargs)
            recorded = queue[index]
            if tuple(recorded.shape) != tuple(result.shape):
                raise ReplayError(
                    f"draw {name}/{index}: recorded shape {tuple(recorded.shape)} but the "
                    f"code asked for {tuple(result.shape)}"
                )
            used[name] = index + 1
            with torch.no_grad():
                result.copy_(torch.from_numpy(np.ascontiguousarray(recorded)))
            return result

        return wrapper

    with patch_torch_functions(names, make_wrapper):
        yield used
    if strict:
        left = {n: (used.get(n, 0), len(q)) for n, q in queues.items() if n in used}
        left = {n: c for n, c in left.items() if c[0] < c[1]}
        if left:
            detail = ", ".join(f"{n}: {u} of {t} used" for n, (u, t) in left.items())
            raise ReplayError(f"recorded draws left unconsumed ({detail})")


def compare_to_fixture(
    fx: Fixture, recorded: Mapping[str, np.ndarray | torch.Tensor]
) -> dict[str, float]:
    """Max |recorded - fixture| for every key both have.

    `recorded` keys are namespaced ("outputs/audio") or bare module paths, which are
    looked up among the fixture's intermediates (what a Recorder produces). A shape
    mismatch gives inf and a NaN on either side gives nan, so both fail any threshold.
    Results are keyed by the namespaced fixture key.
    """
    expected = fx.arrays()
    out: dict[str, float] = {}
    for key, value in recorded.items():
        full = key if key in expected else f"intermediates/{key}"
        if full not in expected or not is_array_like(value):
            continue
        got = value if isinstance(value, np.ndarray) else tensor_to_numpy(value)[0]
        want = expected[full]
        if got.shape != want.shape:
            out[full] = float("inf")
        elif got.size == 0:
            out[full] = 0.0
        else:
            diff = np.abs(_widen(got) - _widen(want))
            out[full] = float(np.max(diff))
    return out


def _widen(array: np.ndarray) -> np.ndarray:
    """float64 (complex128 for complex) so int and bool differences are not wrapped."""
    return array.astype(np.complex128 if np.iscomplexobj(array) else np.float64)


def _queues(draws: Mapping[str, np.ndarray | torch.Tensor]) -> dict[str, list[np.ndarray]]:
    """`<fn>/<i>` keys -> per-function lists in index order; gaps are an error."""
    indexed: dict[str, dict[int, np.ndarray]] = {}
    for key, value in draws.items():
        bare = key.removeprefix("draws/")
        name, _, index = bare.rpartition("/")
        if not name or not index.isdigit():
            raise ReplayError(f"draw key {key!r} is not of the form <fn>/<index>")
        array = value if isinstance(value, np.ndarray) else tensor_to_numpy(value)[0]
        indexed.setdefault(name, {})[int(index)] = array
    queues: dict[str, list[np.ndarray]] = {}
    for name, by_index in indexed.items():
        missing = sorted(set(range(len(by_index))) - set(by_index))
        if missing:
            raise ReplayError(f"draws for {name!r} skip index {missing[0]}")
        queues[name] = [by_index[i] for i in range(len(by_index))]
    return queues
