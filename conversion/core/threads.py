"""One place that sets eager torch's thread count."""

from __future__ import annotations

# Eager torch with 2 threads on a shared 2-core machine stalls (16 s vs 1.7 s for a short
# phrase, measured on Kokoro); the Core AI Linux runtime is single-threaded anyway, so eager
# baselines on one thread compare like with like.
EAGER_THREADS = 1


def pin_torch_threads(threads: int = EAGER_THREADS) -> None:
    import torch

    torch.set_num_threads(threads)
