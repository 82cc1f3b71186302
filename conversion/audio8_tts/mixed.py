"""The port notes' mixed `ar` graph: the slow AR with int8 weights (fp32 activations), the fast
AR in fp16, one graph (`prefill` + `frame`, as `ar.graphs`).

coreai-opt 0.4.0's `quantize_weights` has no per-op or per-constant selection (its selectors
are an element count and the set of consuming op types), and `precision.prepare_module` halves
a whole module. So the mixed graph is made in two steps:

1. before conversion: an `ar` graph (`ar.graphs.Audio8ARGraph`, built from the checkpoint's
   weights) whose own fast-AR modules (`FAST_MODULES`, the fast RoPE table among them) are
   half; the graph casts the slow hidden to the fast AR's weight dtype where it enters the fast
   AR, the sampler's uniforms stay fp32 inputs and the sampler casts the fast logits to fp32
   (`draw_tokens`), so only the fast AR runs in half;
2. after conversion: coreai-opt's own per-channel int8 rule (`quantize_weights`), restricted to
   float32 constants. After step 1 every float32 weight constant left in the program belongs
   to the slow AR (its embeddings, layers, tied head rows, RoPE table); the fast AR's are
   float16 and are left alone.

The restriction is a wrapper around coreai-opt's private `_should_compress_op`, in place only
while this graph is converted (`slow_only_int8`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from conversion.core.export.program import GraphSpec

from .ar.graphs import Audio8ARGraph, ar_graph_spec

MIXED = "mixed"  # the `ar` graph's precision key in a bundle key (`export.export_bundle`)
FAST_MODULES = (
    "fast_project_in",
    "fast_embeddings",
    "fast_layers",
    "fast_norm",
    "fast_output",
    "fast_rope",
)
PER_AR = {"slow": "int8", "fast": "fp16"}


def mixed_graph(model) -> Audio8ARGraph:
    """The `ar` graph of `model`'s weights (a model holding the checkpoint: `config` +
    `state_dict()`, e.g. the loaded reference LM, which is left untouched) with its fast AR in
    half (step 1); the slow AR float32."""
    graph = Audio8ARGraph.from_model(model).eval()
    for name in FAST_MODULES:
        getattr(graph, name).half()
    return graph


def mixed_ar_spec(model) -> GraphSpec:
    spec = ar_graph_spec(mixed_graph(model))
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
