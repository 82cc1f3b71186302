"""Audio8's fault catalogue: port faults a new user's bug would be, and which gate rung kills each.

Each `Mutant.inject` breaks the port (never the reference) while it is open: a host step patched
(the frame loop, the prefill copy, the codec window plan), or the torch code of one graph
patched while that graph is re-exported into a copy of the baseline bundle (`_rebuilt`: the
project's BundleWriter, so the copy verifies like any bundle; the other graphs and host files
are copied as they are). A sampler fault lives in the fused `ar` graph (its draws are in the
graph), so it is a graph fault; `_draw` and `Audio8ARGraph._semantic` also feed the gate's
standalone sampler bundle, which is re-exported with them (its cache is keyed on the code it
traces).

The reference record (`gate.ar_rungs.reference_run`) and the prompt are computed once per
catalogue run; each fault runs the same ladder as `voxport gate` (`gate.ladder.ladder_rungs`)
against that record.
Audio8's sampler has no min-p and no repetition penalty (RAS is its repetition control): the
catalogue turns RAS off instead.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch

from conversion.core.bundle import BundleWriter, load_manifest
from gates.ladder import LadderReport, run_ladder
from gates.mutants import KillTable, Mutant, run_catalogue

from .ar import graphs as G
from .ar import host as AH
from .ar import layers as AL
from .codec import graphs as CG
from .codec import host as CH
from .gate import ar_rungs as GA
from .gate import sampler_rungs as GS
from .weights import Loaded

I32 = torch.int32


@contextmanager
def _patched(obj: Any, name: str, value: Any) -> Iterator[None]:
    old = getattr(obj, name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        setattr(obj, name, old)


# -- graph faults: the `ar` graph ---------------------------------------------------------------


def _faulty_slow(kv_shift: int = 0, mask_shift: int = 0, rope_shift: int = 0) -> Callable:
    """`Audio8ARGraph._slow` with one index off: the KV write of a frame call (`kv_shift`),
    the causal mask of a prefill window (`mask_shift`), or the RoPE position (`rope_shift`)."""

    def _slow(self, codes: torch.Tensor, pos: torch.Tensor):
        c = self.config
        w = codes.shape[-1]
        rows32 = pos.to(I32) + torch.arange(w, dtype=I32)
        rows = rows32.to(torch.int64)
        cos, sin = self.rope.rows((rows + rope_shift).clamp(max=self.length - 1))
        keys32 = torch.arange(self.length, dtype=I32)
        group = c.n_head // c.n_local_heads
        shift = mask_shift if w > 1 else 0
        visible = keys32[None, :] <= AL.grouped_rows(rows32, group)[:, None] + shift
        write = (rows + (kv_shift if w == 1 else 0)).clamp(max=self.length - 1)
        x = AL.embed_columns(self.embeddings, self.codebook_embeddings, codes.clamp(min=0), c)
        for block, cache in zip(self.layers, self.caches, strict=True):
            q, k, v = block.attention.qkv(block.attention_norm(x), cos, sin)
            cache.k.index_copy_(2, write, k)
            cache.v.index_copy_(2, write, v)
            x = block.finish(x, block.attention.mix(q, cache.k, cache.v, visible))
        return x

    return _slow


_ORIG_HEAD_ROWS = G.head_rows


def _head_eos_row_from_pad(embeddings: torch.Tensor, c) -> torch.Tensor:
    # the 4,097th row read at the pad id (151,643) instead of eos (151,645)
    rows = _ORIG_HEAD_ROWS(embeddings, c).clone()
    rows[-1] = embeddings[c.pad_token_id]
    return rows


def _rope_fp32_pairs(length: int, head_dim: int, base: float):
    """RoPE tables at exact float32 angles (the publisher rounds cos / sin to bfloat16)."""
    exponent = torch.arange(head_dim // 2, dtype=torch.float32) * 2 / head_dim
    angle = torch.arange(length, dtype=torch.float32)[:, None] / (float(base) ** exponent)[None]
    return torch.cos(angle), torch.sin(angle)


def _rotate_half(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate-half pairs (i, i + d/2) instead of the publisher's interleaved GPT-J pairs."""
    d = x.shape[-1]
    x32 = x.to(torch.float32)
    c = torch.cat((cos[:, 0::2], cos[:, 0::2]), dim=-1)[:, None, :]
    s = torch.cat((sin[:, 0::2], sin[:, 0::2]), dim=-1)[:, None, :]
    partner = torch.cat((-x32[..., d // 2 :], x32[..., : d // 2]), dim=-1)
    return (x32 * c + partner * s).to(x.dtype)


def _frame_input_fault(which: str) -> Callable:
    """`frame` that ignores part of the column it is fed: the previous semantic (row 0) or the
    previous frame's codes (rows 1..10)."""
    orig = G.Audio8ARGraph.frame

    def frame(self, codes, pos, *rest):
        if which == "semantic":
            fixed = torch.full_like(codes[:, :1], self.config.semantic_begin_id)
            codes = torch.cat((fixed, codes[:, 1:]), dim=1)
        else:
            codes = torch.cat((codes[:, :1], torch.zeros_like(codes[:, 1:])), dim=1)
        return orig(self, codes, pos, *rest)

    return frame


def _prefill_ignores_prompt() -> Callable:
    orig = G.Audio8ARGraph.prefill

    def prefill(self, codes, pos):
        real = codes[:, :1] >= 0  # keep the pad marker: the text ids become id 0
        row0 = torch.where(real, torch.zeros_like(codes[:, :1]), codes[:, :1])
        return orig(self, torch.cat((row0, codes[:, 1:]), dim=1), pos)

    return prefill


def _ras_off(self, logits, noise_slow, window):
    # the RAS draw is made but never taken
    _, normal_id, high_id = _ORIG_SEMANTIC(self, logits, noise_slow, window)
    # always normal_id, as its own tensor (an output may not alias another)
    return torch.where(normal_id == high_id, high_id, normal_id), normal_id, high_id


_ORIG_SEMANTIC = G.Audio8ARGraph._semantic
_ORIG_DRAW = G._draw


def _draw_top_p_off(f_c, idx, cum, u, top_p, temperature):
    return _ORIG_DRAW(f_c, idx, cum, u, 1.0, temperature)


def _draw_u_fp16(f_c, idx, cum, u, top_p, temperature):
    return _ORIG_DRAW(f_c, idx, cum, u.half().float(), top_p, temperature)


def _wrong_eos_semantic(self, logits, noise_slow, window):
    sem, normal_id, high_id = _ORIG_SEMANTIC(self, logits, noise_slow, window)
    eos = self.config.eos_token_id

    def shift(x):
        return torch.where(x == eos, x + 1, x)

    return shift(sem), shift(normal_id), shift(high_id)


@contextmanager
def _sampler_fault(draw: Callable) -> Iterator[None]:
    """`_draw` replaced in the graph module, and the gate's sampler bundle re-exported with it."""
    cached = dict(GS._SAMPLER_BUNDLES)
    GS._SAMPLER_BUNDLES.clear()
    try:
        with _patched(G, "_draw", draw):
            yield
    finally:
        GS._SAMPLER_BUNDLES.clear()
        GS._SAMPLER_BUNDLES.update(cached)


# -- graph faults: the `codec` graph ------------------------------------------------------------

_ORIG_CODEC_FORWARD = CG.CodecDecode.forward


def _codec_ignores_codes(self, codes):
    return _ORIG_CODEC_FORWARD(self, torch.zeros_like(codes))


_ORIG_CODEC_INIT = CG.CodecDecode.__init__


def _codec_clamp(kind: str) -> Callable:
    """`CodecDecode.__init__` with the per-book clamp (port note item 8: the fast head draws over
    4,096 rows, books 1..9 hold 1,024) gone: `removed` bounds every book at the fast head's last
    row (no id it draws is clamped: past the stacked table for the last book, which this runtime
    refuses as an out-of-range gather), `stacked` bounds each book at the stacked table's end (a
    residual draw past its book silently reads the next books' entries)."""

    def __init__(self, codec, frames: int) -> None:
        _ORIG_CODEC_INIT(self, codec, frames)
        if kind == "removed":
            bound = torch.full_like(self.max_code, codec.cfg.semantic_size - 1)
        else:
            bound = self.table.shape[0] - 1 - self.offsets
        self.max_code = bound.to(self.max_code.dtype)

    return __init__


# -- graph faults: the `encoder` graph ----------------------------------------------------------

_ORIG_ENCODE_FORWARD = CG.CodecEncode.forward


def _encoder_ignores_audio(self, audio):
    return _ORIG_ENCODE_FORWARD(self, torch.zeros_like(audio))


# -- host faults --------------------------------------------------------------------------------


@contextmanager
def _prompt_drops_first_column() -> Iterator[None]:
    """The bundle host's prompt builder loses the prompt's first column (an off-by-one slice)."""
    from . import pipeline

    orig = pipeline.build_prompt

    def build(*a, **k):
        return orig(*a, **k)[:, 1:]

    with _patched(pipeline, "build_prompt", build):
        yield


_ORIG_NEXT_WINDOW = AH.next_window


def _window_without_quirk(window: np.ndarray, step: int, semantic: int) -> np.ndarray:
    # frame 0's semantic enters the window like every later one
    return _ORIG_NEXT_WINDOW(window, step + 1, semantic)


def _stride_blind_prefill(session, prompt, columns, config, state):
    """The prefill copy reading each window of the [11, P] prompt as if its rows were `n` long
    (the slice's shape, not the array's row stride)."""
    calls = 0
    rows = config.num_codebooks + 1
    flat = np.ascontiguousarray(prompt).reshape(-1)
    for start in range(0, columns, G.PREFILL_WINDOW):
        n = min(G.PREFILL_WINDOW, columns - start)
        codes = np.zeros((1, rows, G.PREFILL_WINDOW), np.int32)
        codes[0, 0, :] = -1
        codes[0, :, :n] = flat[start : start + rows * n].reshape(rows, n)
        session.run(G.GRAPH, G.PREFILL, {"codes": codes, "pos": np.array([start], np.int32)}, state)
        calls += 1
    return calls


_ORIG_PLAN = CH.window_plan


def _plan_off_by_one(total: int, window: int, context: int):
    # later windows start emitting one frame late: the frame at each split is never emitted
    return [(s, a + (1 if a else 0), b) for s, a, b in _ORIG_PLAN(total, window, context)]


# -- the catalogue ------------------------------------------------------------------------------


def _m(name: str, fault: str, inject: Callable, graph: str | None = None) -> Mutant:
    return Mutant(name, fault, inject, graph)


CATALOGUE: tuple[Mutant, ...] = (
    _m(
        "frame-ignores-previous-semantic",
        "the frame graph feeds a fixed semantic id instead of the column's",
        lambda: _patched(G.Audio8ARGraph, "frame", _frame_input_fault("semantic")),
        "ar",
    ),
    _m(
        "frame-ignores-previous-codes",
        "the frame graph drops the fed column's ten codes",
        lambda: _patched(G.Audio8ARGraph, "frame", _frame_input_fault("codes")),
        "ar",
    ),
    _m(
        "prefill-ignores-prompt",
        "the prefill graph replaces the prompt's text ids by id 0",
        lambda: _patched(G.Audio8ARGraph, "prefill", _prefill_ignores_prompt()),
        "ar",
    ),
    _m(
        "rope-position-plus-one",
        "the slow AR's RoPE position is one past the KV row",
        lambda: _patched(G.Audio8ARGraph, "_slow", _faulty_slow(rope_shift=1)),
        "ar",
    ),
    _m(
        "rope-fp32-angles",
        "the RoPE tables hold exact float32 angles, not the publisher's bfloat16-rounded ones",
        lambda: _patched(AL, "bf16_rope_pairs", _rope_fp32_pairs),
        "ar",
    ),
    _m(
        "rope-rotate-half",
        "RoPE turns rotate-half pairs (i, i + d/2), not interleaved pairs (2i, 2i + 1)",
        lambda: _patched(AL, "rotate_pairs", _rotate_half),
        "ar",
    ),
    _m(
        "head-eos-row-from-pad",
        "the 4,097-row head takes its eos row from the pad id's embedding",
        lambda: _patched(G, "head_rows", _head_eos_row_from_pad),
        "ar",
    ),
    _m(
        "kv-write-one-slot-off",
        "a frame call writes its key / value one KV row late",
        lambda: _patched(G.Audio8ARGraph, "_slow", _faulty_slow(kv_shift=1)),
        "ar",
    ),
    _m(
        "prefill-mask-off-by-one",
        "a prefill window's rows see one row ahead (causal mask off by one)",
        lambda: _patched(G.Audio8ARGraph, "_slow", _faulty_slow(mask_shift=1)),
        "ar",
    ),
    _m(
        "ras-off",
        "the frame graph never takes the RAS draw",
        lambda: _patched(G.Audio8ARGraph, "_semantic", _ras_off),
        "ar",
    ),
    _m(
        "top-p-off",
        "the sampler ignores top_p (top-k only)",
        lambda: _sampler_fault(_draw_top_p_off),
        "ar",
    ),
    _m(
        "uniforms-fp16",
        "the sampler casts its uniforms to fp16 (fp32 required)",
        lambda: _sampler_fault(_draw_u_fp16),
        "ar",
    ),
    _m(
        "wrong-eos-id",
        "the frame graph returns eos as eos + 1",
        lambda: _patched(G.Audio8ARGraph, "_semantic", _wrong_eos_semantic),
        "ar",
    ),
    _m(
        "codec-ignores-codes",
        "the codec graph decodes zeros whatever codes it is given",
        lambda: _patched(CG.CodecDecode, "forward", _codec_ignores_codes),
        "codec",
    ),
    _m(
        "codec-clamp-removed",
        "the codec graph drops the per-book clamp (codes up to the fast head's 4,095 unclamped)",
        lambda: _patched(CG.CodecDecode, "__init__", _codec_clamp("removed")),
        "codec",
    ),
    _m(
        "codec-clamp-on-stacked-table",
        "the codec graph clamps to the stacked table's end, not each book's",
        lambda: _patched(CG.CodecDecode, "__init__", _codec_clamp("stacked")),
        "codec",
    ),
    _m(
        "encoder-ignores-audio",
        "the encoder graph encodes silence whatever clip it is given",
        lambda: _patched(CG.CodecEncode, "forward", _encoder_ignores_audio),
        "encoder",
    ),
    _m(
        "prompt-drops-first-column",
        "the host's prompt builder drops the prompt's first column",
        _prompt_drops_first_column,
    ),
    _m(
        "ras-first-frame-quirk-removed",
        "the frame loop puts frame 0's semantic in the RAS window",
        lambda: _patched(AH, "next_window", _window_without_quirk),
    ),
    _m(
        "stride-blind-prefill-copy",
        "the prefill copy takes a window of the prompt with the slice's row length",
        lambda: _patched(AH, "_prefill", _stride_blind_prefill),
    ),
    _m(
        "codec-split-off-by-one",
        "the streamed decode's later windows emit from one frame late",
        lambda: _patched(CH, "window_plan", _plan_off_by_one),
    ),
)
# CI's catalogue (tests/audio8_tts/test_mutants.py): one graph fault per graph the gate decodes
# through (`ar`: a numeric fault only the logits rung sees; `codec`, and the codec's clamp,
# which only codes past their book reach) and the three host steps
REDUCED_CATALOGUE = (
    "rope-position-plus-one",
    "codec-ignores-codes",
    "codec-clamp-on-stacked-table",
    "ras-first-frame-quirk-removed",
    "stride-blind-prefill-copy",
    "codec-split-off-by-one",
)


# -- building and running -----------------------------------------------------------------------


def _spec(loaded: Loaded, graph: str):
    if graph == "ar":
        return G.ar_graph_spec(loaded.lm)
    if graph == "codec":
        return CG.codec_graph_spec(loaded.codec)
    if graph == "encoder":
        return CG.encoder_graph_spec(loaded.codec)
    raise ValueError(f"no graph {graph!r} in an audio8 bundle")


def _rebuilt(loaded: Loaded, base: Path, graph: str, dest: Path) -> Path:
    """A copy of bundle `base` with `graph` re-exported (the port as it is now patched)."""
    from .export import ASSET_INFO

    man = load_manifest(base, verify=False)
    meta = {k: v for k, v in man.meta.items() if k != "files"}
    with (
        torch.no_grad(),
        BundleWriter(
            dest,
            man.model,
            precision=man.precision,
            weights_sha256=man.weights_sha256,
            config=man.config,
            meta=meta,
            key=man.key,
            info=ASSET_INFO,
        ) as bw,
    ):
        for name, entry in man.graphs.items():
            if name == graph:
                bw.add_graph(_spec(loaded, graph), precision=entry["precision"])
            else:
                src = base / entry["asset"]
                target = bw.staging / entry["asset"]
                (shutil.copytree if src.is_dir() else shutil.copy2)(src, target)
                bw.graphs[name] = dict(entry)
        for fname in man.meta.get("files", {}):
            bw.add_file(base / fname)
    return dest


def make_evaluate(
    loaded: Loaded, bundle: Path, seed: int
) -> Callable[[Mutant | None], LadderReport]:
    """`evaluate(mutant)` for `run_catalogue`: the reference record made once, here."""
    from .gate.ladder import (
        GATE_FRAMES,
        gate_prompt,
        ladder_rungs,
        reference_prompt,
        reference_voice_run,
    )
    from .pipeline import Audio8Pipeline

    config = loaded.config
    ref = GA.reference_run(loaded.lm, reference_prompt(loaded), GATE_FRAMES[config.name], seed)
    voice_ref = reference_voice_run(loaded, seed)

    def ladder(path: Path) -> LadderReport:
        with Audio8Pipeline(path, isolate=True) as pipeline:
            prompt = gate_prompt(
                pipeline, config
            )  # the bundle host's builder: a host fault's place
            rungs = ladder_rungs(loaded, pipeline, prompt, ref, seed, voice_ref=voice_ref)
            return run_ladder("audio8_tts", rungs, progress=False)

    def evaluate(mutant: Mutant | None) -> LadderReport:
        if mutant is None:
            return ladder(bundle)
        with mutant.inject():
            if mutant.graph is None:
                return ladder(bundle)
            with tempfile.TemporaryDirectory(prefix="voxport-a8-mutant-") as tmp:
                return ladder(_rebuilt(loaded, bundle, mutant.graph, Path(tmp) / "bundle"))

    return evaluate


def run_mutants(
    loaded: Loaded, bundle: Path, seed: int, mutants: list[Mutant], verbose: bool = True
) -> KillTable:
    import sys

    def said(i: int, n: int, m: Mutant) -> None:
        if verbose:
            print(f"[audio8_tts] fault {i}/{n}: {m.name} ({m.where})", file=sys.stderr, flush=True)

    return run_catalogue("audio8_tts", mutants, make_evaluate(loaded, bundle, seed), said)
