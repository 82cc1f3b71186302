"""The port notes' mixed `ar` graph: the slow AR with int8 weights (fp32 activations), the fast
AR in fp16, one graph (`prefill` + `frame`, as `ar.graphs`).

coreai-opt 0.4.0's `quantize_weights` has no per-op or per-constant selection (its selectors
are an element count and the set of consuming op types), and `precision.prepare_module` halves
a whole module. So the mixed graph is made in two steps:

1. before conversion: a copy of the reference LM whose fast-AR modules (`FAST_MODULES`) and
   fast RoPE table are half, the slow hidden cast to half where it enters the fast AR (a
   forward pre-hook on `fast_project_in`); the sampler's uniforms stay fp32 inputs and the
   sampler casts the fast logits to fp32 (`draw_tokens`), so only the fast AR runs in half;
2. after conversion: coreai-opt's own per-channel int8 rule (`quantize_weights`), restricted to
   float32 constants. After step 1 every float32 weight constant left in the program belongs
   to the slow AR (its embeddings, layers, tied head rows, RoPE table); the fast AR's are
   float16 and are left alone.

The restriction is a wrapper around coreai-opt's private `_should_compress_op`, in place only
while this graph is converted (`slow_only_int8`).
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator

import torch

from conversion.core.export import GraphSpec

from .ar.graphs import ar_graph_spec
from .reference import Audio8LM

MIXED = "mixed"  # the `ar` graph's precision key in a bundle key (`export.export_bundle`)
FAST_MODULES = ("fast_project_in", "fast_embeddings", "fast_layers", "fast_norm", "fast_output")
PER_AR = {"slow": "int8", "fast": "fp16"}


def _to_half(_module, args):
    return tuple(
        a.half() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args
    )


def mixed_lm(lm: Audio8LM) -> Audio8LM:
    """A copy of `lm` with the fast AR in half (step 1); the slow AR untouched (fp32)."""
    m = copy.deepcopy(lm).eval()
    for name in FAST_MODULES:
        getattr(m, name).half()
    m.fast_freqs_cis = m.fast_freqs_cis.half()
    m.fast_project_in.register_forward_pre_hook(_to_half)
    return m


def mixed_ar_spec(lm: Audio8LM) -> GraphSpec:
    spec = ar_graph_spec(mixed_lm(lm))
    spec.meta["precision_per_ar"] = dict(PER_AR)
    return spec


def _is_f32(op) -> bool:
    return str(op.result.type.element_type) == "f32"


@contextlib.contextmanager
def slow_only_int8() -> Iterator[None]:
    """While open, the int8 export path (`precision.quantize_program`, coreai-opt) quantizes
    only float32 constants."""
    from coreai_opt.coreai_utils.passes import weight_quantization as wq

    original = wq._should_compress_op

    def only_f32(op, threshold, ops) -> bool:
        return original(op, threshold, ops) and _is_f32(op)

    wq._should_compress_op = only_f32
    try:
        yield
    finally:
        wq._should_compress_op = original
