"""Audio8 DualAR as one export-ready graph "ar": windowed `prefill` + one fused `frame` call.

    prefill  codes [1, 11, W] int32 (W = 32; a pad row has row 0 = -1, pad rows only at the end)
             pos [1] int32: the KV row of the window's first row (pos + W <= max_seq_len)
             writes KV rows pos..pos+W-1 (a pad row writes garbage that a later row overwrites
             before anything reads it), causal over every row before
             -> logits [1, 4097] (semantic ids then eos) and hidden [1, dim] (post-norm) of the
                window's LAST REAL row
    frame    codes [1, 11, 1] int32: the column fed at KV row `pos` ([semantic id, code_0..9]; the
                first frame feeds the prompt's last column, the prefill having covered the rows
                before it), pos [1] int32,
             noise_slow [2, 4097] f32: u of the normal draw (row 0) and of the RAS draw (row 1),
             window [10] int32: RAS window, vocabulary ids, -1 = empty slot (all -1 for the
                first two frames: the publisher's quirk, see reference.py),
             noise_fast [9, 4096] f32: u of codebook draws 1..9,
             forced [11] int32 + use_forced [1] int32: when use_forced != 0 the fast AR is fed
                forced[1..10] (code_0..code_9) instead of its own draws (teacher forcing); the
                draws are made and returned either way
             -> logits [1, 4097], semantic/normal/high [1] int32 (vocabulary ids; semantic is
                after RAS), codes [10] int32 (code_0 = clamp(semantic - begin, 0, 4095), then the
                nine draws, 0..4095: the codec clamps books 1..9 to 0..1023), fast_logits [9, 4096]

One runtime call per frame: the slow step over the KV state, the semantic draw with RAS, the fast
AR's ten rows unrolled (its keys concatenated in-graph; no state) and nine codebook draws.

The KV state is one pair of buffers per layer, `caches.{i}.k` / `caches.{i}.v` [1, kv_heads,
max_seq_len, head_dim] (runtime state `caches_{i}_k`, ...), written with `index_copy_`
(a stacked buffer costs a whole-cache `where` per layer per step; see chatterbox/t3/graphs.py).

The sampler has no sort: topk(50) bounds the candidates (top-k removes the rest anyway); the
top-p normaliser is the sum of exp over the whole row (the publisher's softmax over what the
semantic mask left = the 4,097 rows); a cumsum over the 50 sorted probabilities cuts at top_p
(inclusive cumsum > top_p is removed, the best kept); the kept scores are divided by the
temperature; the draw is argmax(exp(s - s_max) / -log u) with u gathered at the candidates. The
normal and the RAS draw share one topk and one normaliser (both cut the untempered scores).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from conversion.core.export import FunctionSpec, GraphSpec
from conversion.core.sampling import U_MAX, U_MIN

from ..config import Audio8Config
from ..reference import Audio8LM, SamplingParams

GRAPH = "ar"
PREFILL_WINDOW = 32
PREFILL = "prefill"
FRAME = "frame"
PREFILL_OUTPUTS = ["logits", "hidden"]
FRAME_OUTPUTS = ["logits", "semantic", "normal", "high", "codes", "fast_logits"]


class _Cache(nn.Module):
    def __init__(self, kv_heads: int, length: int, head_dim: int) -> None:
        super().__init__()
        self.register_buffer("k", torch.zeros(1, kv_heads, length, head_dim), persistent=False)
        self.register_buffer("v", torch.zeros(1, kv_heads, length, head_dim), persistent=False)


def _candidates(f: torch.Tensor, k: int):
    """topk(f) [B, k] sorted best first, their indices, and p over the whole row (sorted)."""
    f_c, idx = torch.topk(f, k, dim=-1)
    total = torch.exp(f - f_c[:, :1]).sum(dim=-1, keepdim=True)
    p = torch.exp(f_c - f_c[:, :1]) / total
    return f_c, idx, torch.cumsum(p, dim=-1)


def _draw(f_c, idx, cum, u, top_p: float, temperature: float) -> torch.Tensor:
    """One Gumbel-max draw among the candidates -> token index [B] (int64)."""
    first = torch.arange(f_c.shape[-1], device=f_c.device) == 0
    keep = (cum <= top_p) | first
    s_c = f_c / max(float(temperature), 1e-5)
    r = torch.where(keep, torch.exp(s_c - s_c[:, :1]), torch.zeros_like(s_c))
    e = -torch.log(torch.gather(u.float().clamp(U_MIN, U_MAX), 1, idx))
    pos = torch.argmax(r / e, dim=-1, keepdim=True)
    return torch.gather(idx, 1, pos)[:, 0]


def draw_tokens(
    logits: torch.Tensor, u: torch.Tensor, top_k: int, top_p: float, temperature: float
) -> torch.Tensor:
    """The audio8 processor + draw on [B, V] logits, in graph form -> [B] int64."""
    f_c, idx, cum = _candidates(logits.float(), min(top_k, logits.shape[-1]))
    return _draw(f_c, idx, cum, u, top_p, temperature)


class Audio8ARGraph(nn.Module):
    """prefill / frame over one KV state; parameters are the reference model's (`lm.`)."""

    def __init__(self, lm: Audio8LM, sampling: SamplingParams | None = None) -> None:
        super().__init__()
        c = self.config = lm.config
        self.lm = lm
        self.sampling = sampling or SamplingParams.from_config(c)
        self.length = c.max_seq_len
        self.caches = nn.ModuleList(
            _Cache(c.n_local_heads, c.max_seq_len, c.head_dim) for _ in range(c.n_layer)
        )
        self.head = nn.Parameter(lm.head_rows().detach().clone(), requires_grad=False)
        self.n_compact = c.semantic_count + 1

    def reset(self) -> None:
        for cache in self.caches:
            cache.k.zero_()
            cache.v.zero_()

    # -- slow AR over the state ---------------------------------------------------------------
    def _slow(self, codes: torch.Tensor, pos: torch.Tensor):
        """codes [1, 11, W] (pad rows row0 = -1) at KV rows pos.. -> normed rows [1, W, dim]."""
        lm = self.lm
        w = codes.shape[-1]
        ids = codes.long().clamp(min=0)
        positions = pos.long() + torch.arange(w)  # [W]
        table = lm.freqs_cis.index_select(0, positions.clamp(max=self.length - 1))
        visible = torch.arange(self.length)[None, :] <= positions[:, None]  # [W, L]
        x = lm.embed(ids)
        for layer, cache in zip(lm.layers, self.caches, strict=True):
            att = layer.attention
            q, k, v = att.project(layer.attention_norm(x), table)
            cache.k.index_copy_(2, positions, k)
            cache.v.index_copy_(2, positions, v)
            h = x + att.attend(q, cache.k, cache.v, visible)
            x = h + layer.feed_forward(layer.ffn_norm(h))
        return x

    def prefill(self, codes: torch.Tensor, pos: torch.Tensor):
        x = self._slow(codes, pos)
        last = (codes[0, 0] >= 0).sum(dim=0, keepdim=True).long() - 1  # [1]
        hidden = self.lm.norm(x.index_select(1, last))[:, 0]  # [1, dim]
        return F.linear(hidden, self.head), hidden

    # -- one frame ------------------------------------------------------------------------------
    def _fast_rows(self, x: torch.Tensor, j: int, past: list):
        lm = self.lm
        table = lm.fast_freqs_cis[j : j + 1]
        for i, layer in enumerate(lm.fast_layers):
            att = layer.attention
            q, k, v = att.project(layer.attention_norm(x), table)
            if past[i] is not None:
                k = torch.cat((past[i][0], k), dim=2)
                v = torch.cat((past[i][1], v), dim=2)
            past[i] = (k, v)
            h = x + att.attend(q, k, v, None)
            x = h + layer.feed_forward(layer.ffn_norm(h))
        return lm.fast_output(lm.fast_norm(x))[:, -1]

    def frame(self, codes, pos, noise_slow, window, noise_fast, forced, use_forced):
        lm, c, sp = self.lm, self.config, self.sampling
        x = self._slow(codes, pos)
        hidden = lm.norm(x[:, -1])  # [1, dim]
        logits = F.linear(hidden, self.head)  # [1, 4097]

        f_c, idx, cum = _candidates(logits, min(sp.top_k, self.n_compact))
        normal = _draw(f_c, idx, cum, noise_slow[0:1], sp.top_p, sp.temperature)
        high = _draw(f_c, idx, cum, noise_slow[1:2], sp.ras_top_p, sp.ras_temperature)
        eos = torch.full_like(normal, c.eos_token_id)
        normal_id = torch.where(normal == c.semantic_count, eos, normal + c.semantic_begin_id)
        high_id = torch.where(high == c.semantic_count, eos, high + c.semantic_begin_id)
        repeated = (window.long()[None, :] == normal_id[:, None]).any(dim=1)
        use_high = repeated & (normal < c.semantic_count)
        semantic_id = torch.where(use_high, high_id, normal_id)  # [1]

        forcing = use_forced.long() != 0  # [1]
        forced = forced.long()
        code = (semantic_id - c.semantic_begin_id).clamp(0, c.codebook_size - 1)
        draws = [code]
        fast_logits = []
        past: list = [None] * len(lm.fast_layers)
        self._fast_rows(lm.fast_project_in(hidden)[:, None], 0, past)
        feed = torch.where(forcing, forced[1:2], code)
        for j in range(1, c.num_codebooks):
            lg = self._fast_rows(lm.fast_embeddings(feed)[:, None], j, past)
            code = draw_tokens(lg, noise_fast[j - 1 : j], sp.top_k, sp.top_p, sp.temperature)
            draws.append(code)
            fast_logits.append(lg)
            feed = torch.where(forcing, forced[j + 1 : j + 2], code)
        i32 = torch.int32
        return (
            logits,
            semantic_id.to(i32),
            normal_id.to(i32),
            high_id.to(i32),
            torch.cat(draws).to(i32),
            torch.cat(fast_logits, dim=0),
        )

    def forward(
        self,
        codes,
        pos,
        noise_slow=None,
        window=None,
        noise_fast=None,
        forced=None,
        use_forced=None,
    ):
        if noise_slow is None:
            return self.prefill(codes, pos)
        return self.frame(codes, pos, noise_slow, window, noise_fast, forced, use_forced)


def state_paths(graph: Audio8ARGraph) -> list[str]:
    return [f"caches.{i}.{n}" for i in range(len(graph.caches)) for n in ("k", "v")]


def prefill_inputs(window: int = PREFILL_WINDOW, config: Audio8Config | None = None):
    n = (config.num_codebooks + 1) if config else 11
    codes = torch.zeros(1, n, window, dtype=torch.int32)
    codes[0, 0, window // 2 :] = -1
    return {"codes": codes, "pos": torch.zeros(1, dtype=torch.int32)}


def frame_inputs(config: Audio8Config) -> dict[str, torch.Tensor]:
    n_compact = config.semantic_count + 1
    codes = torch.zeros(1, config.num_codebooks + 1, 1, dtype=torch.int32)
    codes[0, 0, 0] = config.semantic_begin_id
    return {
        "codes": codes,
        "pos": torch.zeros(1, dtype=torch.int32),
        "noise_slow": torch.full((2, n_compact), 0.5),
        "window": torch.full((config.ras_window_size,), -1, dtype=torch.int32),
        "noise_fast": torch.full((config.num_codebooks - 1, config.codebook_size), 0.5),
        "forced": torch.zeros(config.num_codebooks + 1, dtype=torch.int32),
        "use_forced": torch.zeros(1, dtype=torch.int32),
    }


def ar_graph_spec(
    lm: Audio8LM, sampling: SamplingParams | None = None, window: int = PREFILL_WINDOW
) -> GraphSpec:
    """Graph "ar": `prefill` (W rows) + `frame`, one module (weights and KV state shared)."""
    graph = Audio8ARGraph(lm, sampling).eval()
    c = graph.config
    if window > c.max_seq_len:
        raise ValueError("the prefill window is longer than the KV cache")
    states = state_paths(graph)
    sp = graph.sampling
    functions = [
        FunctionSpec(PREFILL, graph, prefill_inputs(window, c), PREFILL_OUTPUTS, states),
        FunctionSpec(FRAME, graph, frame_inputs(c), FRAME_OUTPUTS, states),
    ]
    meta = {
        "prefill_window": window,
        "kv_length": c.max_seq_len,
        "layers": c.n_layer,
        "semantic_begin_id": c.semantic_begin_id,
        "eos_token_id": c.eos_token_id,
        "sampling": {
            "top_k": sp.top_k,
            "top_p": sp.top_p,
            "temperature": sp.temperature,
            "ras_top_p": sp.ras_top_p,
            "ras_temperature": sp.ras_temperature,
            "ras_window": sp.ras_window,
        },
        "window_ids": "vocabulary ids, -1 = empty",
    }
    return GraphSpec(GRAPH, functions, meta)


def check_window_fits(pos: int, window: int, length: int) -> None:
    if pos < 0 or pos + window > length:
        raise ValueError(f"prefill window at {pos} (+{window}) does not fit {length} KV rows")


__all__ = [
    "Audio8ARGraph",
    "ar_graph_spec",
    "draw_tokens",
    "frame_inputs",
    "prefill_inputs",
    "state_paths",
    "GRAPH",
    "PREFILL",
    "FRAME",
    "PREFILL_WINDOW",
    "check_window_fits",
]
