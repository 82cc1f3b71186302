"""Turn whatever an oracle produced into a plain numpy array we can store and hash.

Fixtures hold numpy only, so the files stay readable without torch. Torch dtypes that
numpy has no name for (bfloat16, float8) are widened to float32; the caller gets the
original dtype's name back so it can leave a note in the fixture's meta.
"""

from __future__ import annotations

import numpy as np
import torch

# Torch dtypes numpy cannot hold; widening them to float32 is exact.
_WIDEN_TO_FLOAT32 = {
    torch.bfloat16,
    *(
        getattr(torch, name)
        for name in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz")
        if hasattr(torch, name)
    ),
}


def tensor_to_numpy(t: torch.Tensor) -> tuple[np.ndarray, str | None]:
    """Detach, copy to CPU and convert; returns (array, original dtype name if widened).

    The array never shares memory with `t`: an oracle records a tensor the publisher's
    code may later modify in place, and the record must keep the value it had then.
    """
    t = t.detach()
    note = None
    if t.dtype in _WIDEN_TO_FLOAT32:
        note = str(t.dtype).removeprefix("torch.")
        t = t.float()
    return np.array(t.cpu().resolve_conj().resolve_neg().numpy(), copy=True), note


def widening_note(original_dtype: str) -> str:
    """The meta note left on an array that was widened to float32 for storage."""
    return f"stored as float32, recorded as {original_dtype}"


def is_array_like(value: object) -> bool:
    """True for values stored as arrays (tensors, numpy arrays); scalars go to meta instead."""
    return isinstance(value, torch.Tensor | np.ndarray)
