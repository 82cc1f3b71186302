"""The decomposition table handed to `ExportedProgram.run_decompositions`.

coreai-torch's own table, plus decompositions for ops its converter rejects but that have an
exact rewrite in ops it takes.
"""

from __future__ import annotations

from collections.abc import Callable

import coreai_torch
import torch


def _elu(
    x: torch.Tensor, alpha: float = 1.0, scale: float = 1.0, input_scale: float = 1.0
) -> torch.Tensor:
    # aten.elu has no Core AI lowering; expm1 has, and is exact near 0 where exp(x)-1 is not.
    return torch.where(x > 0, x * scale, (alpha * scale) * torch.expm1(x * input_scale))


EXTRA_DECOMPOSITIONS: dict[torch._ops.OpOverload, Callable] = {
    torch.ops.aten.elu.default: _elu,
}


def decomposition_table() -> dict:
    """coreai-torch's recommended table with ELU (and friends) decomposed."""
    table = dict(coreai_torch.get_decomp_table())
    table.update(EXTRA_DECOMPOSITIONS)
    return table
