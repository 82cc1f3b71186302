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
                first two frames: the publisher's quirk, see reference/),
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

The graph computes with its own parts (`ar/layers.py`: norms, rotation, attention, feed-forward,
embedding sum, the 4,097-row head), built from the checkpoint's state dict
(`Audio8ARGraph(config, state_dict)`; `from_model(lm)` reads a loaded reference's
`state_dict()`): the reference (`reference/`) and this graph share the weights and nothing
else, so a bug in either shows as a difference between them. The fast AR's input row is the
slow AR's post-norm last hidden when `config.norm_fastlayer_input` (the published setting), its
pre-norm last hidden otherwise, cast to the fast AR's weight dtype (`mixed.py` halves the fast
AR). Id arithmetic and the masks' compares are int32 (no int64 compare -> bool chains).
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import nn

from conversion.core.export.program import FunctionSpec, GraphSpec
from conversion.core.host.sampling import U_MAX, U_MIN

from ..config import Audio8Config
from ..sampling import MIN_TEMPERATURE, SamplingParams
from .layers import (
    RMSNorm,
    RopeTable,
    blocks,
    embed_columns,
    grouped_rows,
    head_rows,
)

GRAPH = "ar"
PREFILL_WINDOW = 32
PREFILL = "prefill"
FRAME = "frame"
PREFILL_OUTPUTS = ["logits", "hidden"]
FRAME_OUTPUTS = ["logits", "semantic", "normal", "high", "codes", "fast_logits"]
HEAD = "head.weight"  # the one parameter not in the checkpoint: the tied head's 4,097 rows
I32 = torch.int32


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
    s_c = f_c / max(float(temperature), MIN_TEMPERATURE)
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


def _float32_state(state_dict: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {k: v.detach().to(torch.float32) for k, v in state_dict.items()}


class Audio8ARGraph(nn.Module):
    """prefill / frame over one KV state, computed with `ar/layers.py`'s parts.

    `state_dict`: the checkpoint's LM keys (`embeddings.weight`, `layers.{i}.attention.wqkv.*`,
    ..., `fast_output.weight`), e.g. a loaded reference's `lm.state_dict()`; every one must be
    there and nothing else. The graph's parameters are those tensors (float32; the storage is
    shared, not copied) plus `head.weight`, the tied head's 4,097 drawable rows copied from
    `embeddings.weight`. The RoPE tables and KV caches are non-persistent buffers.
    """

    def __init__(
        self,
        config: Audio8Config,
        state_dict: Mapping[str, torch.Tensor],
        sampling: SamplingParams | None = None,
    ) -> None:
        super().__init__()
        c = self.config = config
        self.sampling = sampling or SamplingParams.from_config(c)
        self.length = c.max_seq_len
        self.n_compact = c.semantic_count + 1
        with torch.device("meta"):  # weights come from the state dict: no random init
            self.embeddings = nn.Embedding(c.vocab_size, c.dim)
            self.codebook_embeddings = nn.Embedding(c.codebook_size * c.num_codebooks, c.dim)
            self.layers = blocks(c)
            self.norm = RMSNorm(c.dim, c.norm_eps)
            self.fast_project_in = (
                nn.Linear(c.dim, c.fast_dim) if c.fast_dim != c.dim else nn.Identity()
            )
            self.fast_embeddings = nn.Embedding(c.codebook_size, c.fast_dim)
            self.fast_layers = blocks(c, fast=True)
            self.fast_norm = RMSNorm(c.fast_dim, c.norm_eps)
            self.fast_output = nn.Linear(c.fast_dim, c.codebook_size, bias=False)
            self.head = nn.Linear(c.dim, self.n_compact, bias=False)
        self._load(state_dict)
        self.rope = RopeTable(c.max_seq_len, c.head_dim, c.rope_base)
        self.fast_rope = RopeTable(c.num_codebooks, c.fast_head_dim, c.rope_base)
        self.caches = nn.ModuleList(
            _Cache(c.n_local_heads, c.max_seq_len, c.head_dim) for _ in range(c.n_layer)
        )

    @classmethod
    def from_model(cls, model, sampling: SamplingParams | None = None) -> Audio8ARGraph:
        """From a model that holds the checkpoint (its `config` and `state_dict()` are read, e.g.
        the loaded reference LM): the weights only."""
        return cls(model.config, model.state_dict(), sampling)

    def _load(self, state_dict: Mapping[str, torch.Tensor]) -> None:
        result = self.load_state_dict(_float32_state(state_dict), strict=False, assign=True)
        missing = sorted(set(result.missing_keys) - {HEAD})
        if missing or result.unexpected_keys:
            raise ValueError(
                f"audio8 `ar` graph: the state dict does not fit the {self.config.name} "
                f"configuration (missing {missing}, unexpected {sorted(result.unexpected_keys)})"
            )
        rows = head_rows(self.embeddings.weight.detach(), self.config).clone()
        self.head.weight = nn.Parameter(rows, requires_grad=False)
        for p in self.parameters():
            p.requires_grad_(False)

    def reset(self) -> None:
        for cache in self.caches:
            cache.k.zero_()
            cache.v.zero_()

    # -- slow AR over the state ---------------------------------------------------------------
    def _slow(self, codes: torch.Tensor, pos: torch.Tensor):
        """codes [1, 11, W] (pad rows row0 = -1) at KV rows pos.. -> pre-norm rows [1, W, dim]."""
        c = self.config
        w = codes.shape[-1]
        rows32 = pos.to(I32) + torch.arange(w, dtype=I32)  # [W] KV rows written (and queried)
        rows = rows32.to(torch.int64)
        cos, sin = self.rope.rows(rows.clamp(max=self.length - 1))
        keys32 = torch.arange(self.length, dtype=I32)
        group = c.n_head // c.n_local_heads
        visible = keys32[None, :] <= grouped_rows(rows32, group)[:, None]  # [group*W, L]
        x = embed_columns(self.embeddings, self.codebook_embeddings, codes.clamp(min=0), c)
        for block, cache in zip(self.layers, self.caches, strict=True):
            q, k, v = block.attention.qkv(block.attention_norm(x), cos, sin)
            cache.k.index_copy_(2, rows, k)
            cache.v.index_copy_(2, rows, v)
            x = block.finish(x, block.attention.mix(q, cache.k, cache.v, visible))
        return x

    def prefill(self, codes: torch.Tensor, pos: torch.Tensor):
        x = self._slow(codes, pos)
        last = (codes[0, 0] >= 0).sum(dim=0, keepdim=True) - 1  # [1] int64: last real row
        hidden = self.norm(x.index_select(1, last))[:, 0]  # [1, dim]
        return self.head(hidden), hidden

    # -- one frame ------------------------------------------------------------------------------
    def _fast_row(self, x: torch.Tensor, j: int, past: list):
        """Fast-AR row j ([1, 1, fast_dim]) over the rows before it (`past`, per layer (k, v),
        extended here) -> logits [1, 4096]."""
        cos, sin = self.fast_rope.row(j)
        for i, block in enumerate(self.fast_layers):
            q, k, v = block.attention.qkv(block.attention_norm(x), cos, sin)
            if past[i] is not None:
                k = torch.cat((past[i][0], k), dim=2)
                v = torch.cat((past[i][1], v), dim=2)
            past[i] = (k, v)
            x = block.finish(x, block.attention.mix(q, k, v, None))
        return self.fast_output(self.fast_norm(x))[:, -1]

    def _semantic(self, logits, noise_slow, window):
        """The slow draw with RAS -> (semantic, normal, high) vocabulary ids [1] int32."""
        c, sp = self.config, self.sampling
        f_c, idx, cum = _candidates(logits, min(sp.top_k, self.n_compact))
        normal = _draw(f_c, idx, cum, noise_slow[0:1], sp.top_p, sp.temperature).to(I32)
        high = _draw(f_c, idx, cum, noise_slow[1:2], sp.ras_top_p, sp.ras_temperature).to(I32)
        eos = torch.full_like(normal, c.eos_token_id)
        normal_id = torch.where(normal == c.semantic_count, eos, normal + c.semantic_begin_id)
        high_id = torch.where(high == c.semantic_count, eos, high + c.semantic_begin_id)
        seen = (window.to(I32)[None, :] == normal_id[:, None]).any(dim=1)
        use_high = seen & (normal != c.semantic_count)  # eos is never replaced
        return torch.where(use_high, high_id, normal_id), normal_id, high_id

    def _fast_draws(self, fast_in, semantic_id, noise_fast, forced, use_forced):
        """The fast AR's ten rows and nine draws -> (codes [10] int32, fast logits [9, 4096])."""
        c, sp = self.config, self.sampling
        dtype = self.fast_embeddings.weight.dtype
        forcing = use_forced.to(I32) != 0  # [1]
        forced = forced.to(I32)
        code = (semantic_id - c.semantic_begin_id).clamp(0, c.codebook_size - 1)
        draws, fast_logits = [code], []
        past: list = [None] * len(self.fast_layers)
        self._fast_row(self.fast_project_in(fast_in.to(dtype))[:, None], 0, past)  # unused
        feed = torch.where(forcing, forced[1:2], code)
        for j in range(1, c.num_codebooks):
            rows = self.fast_embeddings(feed.to(torch.int64))[:, None]
            lg = self._fast_row(rows, j, past)
            code = draw_tokens(lg, noise_fast[j - 1 : j], sp.top_k, sp.top_p, sp.temperature)
            code = code.to(I32)
            draws.append(code)
            fast_logits.append(lg)
            feed = torch.where(forcing, forced[j + 1 : j + 2], code)
        return torch.cat(draws), torch.cat(fast_logits, dim=0)

    def frame(self, codes, pos, noise_slow, window, noise_fast, forced, use_forced):
        x = self._slow(codes, pos)
        last = x[:, -1]  # [1, dim], pre-norm
        hidden = self.norm(last)
        logits = self.head(hidden)  # [1, 4097]
        semantic_id, normal_id, high_id = self._semantic(logits, noise_slow, window)
        fast_in = hidden if self.config.norm_fastlayer_input else last
        codes_out, fast_logits = self._fast_draws(
            fast_in, semantic_id, noise_fast, forced, use_forced
        )
        return logits, semantic_id, normal_id, high_id, codes_out, fast_logits

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
    weights, sampling: SamplingParams | None = None, window: int = PREFILL_WINDOW
) -> GraphSpec:
    """Graph "ar": `prefill` (W rows) + `frame`, one module (weights and KV state shared).

    `weights`: an `Audio8ARGraph` (e.g. `mixed.mixed_graph`'s), or a model holding the
    checkpoint (`config` + `state_dict()`, e.g. the loaded reference LM), of which only the
    weights are read (`Audio8ARGraph.from_model`)."""
    if isinstance(weights, Audio8ARGraph):
        if sampling is not None and sampling != weights.sampling:
            raise ValueError("pass the sampling parameters to the graph's constructor")
        graph = weights.eval()
    else:
        graph = Audio8ARGraph.from_model(weights, sampling).eval()
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
