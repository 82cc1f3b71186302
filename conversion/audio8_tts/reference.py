"""Audio8-TTS DualAR language model: a plain-torch fp32 re-author of the publisher's ArkttsModel.

Written from the publisher's `modeling_arktts.py` (`Audio8-AI/Audio8_TTS`,
`model/audio8_tts_0_6B_preview/`), read for facts; none of its code is copied here. Module and
parameter names are the publisher's, so `Audio8LM.load_state_dict` takes a checkpoint's keys
unchanged (the RoPE tables are non-persistent buffers, as theirs are).

This is the eager reference the exported `ar` graph is gated against. It follows the
publisher's control flow, not the graph's: the graph (`ar/graphs.py`, `ar/layers.py`) is a
separate re-author in export-ready form, and the two share the checkpoint's weights and nothing
else (no module, no function), so a bug in either one shows as a difference between them.

Facts this file reproduces (publisher names in brackets):

* Input rows [B, 11, T]: row 0 token ids, rows 1..10 codebook indices. The embedding is
  `embeddings(row0) + where(row0 is semantic, sum_i codebook_embeddings(row_{i+1} + i*4096), 0)`
  [ArkttsModel._embed]: the ten code embeddings, looked up book by book, are summed only where
  row 0 is a semantic id.
* Blocks [ArkttsTransformerBlock]: pre-norm RMSNorm (float32, eps 1e-6), fused `wqkv` (bias on
  for the slow AR, off for the fast AR), `wo` without bias, GQA by repeating each KV head for its
  query heads (query head h reads KV head h // (heads / kv_heads)), scale 1/sqrt(head_dim),
  SwiGLU `w2(silu(w1 x) * w3 x)`. The slow AR's attention is SDPA with a boolean mask, the fast
  AR's a written-out masked softmax, as the publisher's.
* RoPE [_precompute_rope, _apply_rope]: GPT-J pairs (dims 2i, 2i+1 rotate together), angles
  pos * base^(-2i/d) in float32, cos/sin ROUNDED TO BFLOAT16 (also in an fp32 model), applied in
  float32. Slow table over max_seq_len positions, fast table over the 10 codebook positions.
* KV caches [ArkttsKVCache, _setup_generation_caches]: static per-layer storage allocated once
  per generate call; the slow AR's (prompt + frames rows) hands attention the rows written so
  far, the fast AR's (10 slots, one per codebook position) hands all ten slots and a causal mask
  over them hides the ones not yet written for this frame.
* Head: tied, `linear(norm(h), embeddings.weight)` over the WHOLE vocabulary [_slow_step]; the
  records keep the 4,097 drawable rows (semantic ids then eos, `compact_logits`).
* The fast AR [_generate_codebooks, _fast_step]: position 0 is the slow AR's last hidden — its
  post-norm hidden when `config.norm_fastlayer_input` (the published setting), the pre-norm one
  otherwise — through `fast_project_in` (Identity at fast_dim == dim); its logits are computed
  and thrown away. Positions 1..9 are `fast_embeddings(code_{j-1})`, ONE 4,096-row table shared
  by every codebook, code_0 = clamp(semantic - semantic_begin_id, 0, 4095); each gives codebook j
  through `fast_output` (4,096 rows), drawn before the next position runs.
* The sampler [_processed_scores, ArkttsLegacyTopKTopPLogitsProcessor, _sample], in this order:
  (1) semantic mask over the full vocabulary (slow AR only: everything but the semantic ids and
  eos set to -inf), (2) sort the whole row descending; softmax of the UNTEMPERED scores; drop a
  token when its inclusive cumulative sum > top_p OR its rank >= top_k; the best is always kept,
  (3) divide by temperature (clamped to >= 1e-5), (4) p = softmax, token = argmax(p / -log u),
  u ~ U[0,1) one per vocabulary entry (torch.rand of the full shape). generation_config: top_k 50,
  top_p 0.9, temperature 0.7; the fast AR uses the same three, without the semantic mask.
* RAS [_sample_semantic, generate]: every step draws `normal` (top_p, temperature) and then
  `high` (top_p = ras_top_p 0.9, temperature = ras_temperature 1.0, same top_k) with a second u.
  Step 0 returns `normal`. Later steps return `high` when `normal` is in the 10-token window
  `previous` AND is a semantic id (not eos), else `normal`. The window's quirk: after step 0,
  `previous` is created as ZEROS (step 0's token is not put in it); from step 1 on it rolls left
  and takes the step's token. So frame 0's semantic never enters the window; step 1 sees an
  empty window; step k >= 2 sees frames 1..k-1 (the last 10).
* generate: one slow pass over the whole prompt, then per step: the semantic draw on that
  step's logits, the fast AR's nine draws, the window update, and (unless eos) the step's
  column [semantic, code_0..9] through the slow AR for the next step's logits. A frame whose
  semantic is eos ends generation and is not emitted. (The publisher also runs the slow AR on
  the last frame's column, whose logits nothing reads; that pass is skipped here.)
* Codebooks 1..9 are drawn from 4,096 rows but the codec's residual books have 1,024 entries:
  the publisher's codec clamps them at decode; that clamp belongs to the codec, not here.

Uniforms: every draw takes its u as an input. The slow draws use `u_slow` [2, 4097] (row 0 the
normal draw, row 1 the RAS draw; column j is semantic id begin+j, column 4096 eos), expanded to
the full vocabulary for the draw (`expand_uniforms`): u of the vocabulary entries the mask
removes cannot change a draw, so the compact u replays the publisher's full-vocabulary draw.
The fast draws use `u_fast` [9, 4096].
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .config import Audio8Config, BlockShape
from .sampling import MIN_TEMPERATURE, TEMPERATURE, TOP_K, TOP_P, SamplingParams

# ---------------------------------------------------------------------------------------------
# Building blocks (publisher's names)
# ---------------------------------------------------------------------------------------------


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.eps = float(eps)
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        normed = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return normed.to(x.dtype) * self.weight


def rope_table(length: int, head_dim: int, base: float) -> torch.Tensor:
    """[length, head_dim/2, 2] (cos, sin) of pos * base^(-2i/d), bf16-rounded, held as float32."""
    exponents = torch.arange(0, head_dim, 2, dtype=torch.float32)[: head_dim // 2] / head_dim
    inv_freq = 1.0 / (float(base) ** exponents)
    angles = torch.arange(length, dtype=torch.float32)[:, None] * inv_freq[None, :]
    table = torch.stack((torch.cos(angles), torch.sin(angles)), dim=-1)
    return table.to(torch.bfloat16).float()


def apply_rope(x: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """Rotate GPT-J pairs. x [B, T, H, D]; table [T, D/2, 2] or [B, T, D/2, 2]."""
    pairs = x.float().reshape(*x.shape[:-1], x.shape[-1] // 2, 2)
    if table.dim() == 3:
        table = table[None]
    cos = table[..., 0][:, :, None]  # [B, T, 1, D/2]
    sin = table[..., 1][:, :, None]
    even, odd = pairs[..., 0], pairs[..., 1]
    rotated = torch.stack((even * cos - odd * sin, odd * cos + even * sin), dim=-1)
    return rotated.flatten(-2).to(x.dtype)


class StaticKV:
    """One layer's preallocated keys and values [B, kv_heads, length, head_dim].

    `write(slots, k, v)` stores k / v [B, kv_heads, T, D] at `slots` and hands attention either
    the rows written so far (`whole=False`, the slow AR: a prompt, then one row per frame) or all
    `length` slots (`whole=True`, the fast AR: its mask hides the slots not yet written)."""

    def __init__(self, batch: int, kv_heads: int, length: int, head_dim: int, whole: bool):
        self.keys = torch.zeros(batch, kv_heads, length, head_dim)
        self.values = torch.zeros(batch, kv_heads, length, head_dim)
        self.whole = whole
        self.filled = 0

    def write(self, slots: torch.Tensor, k: torch.Tensor, v: torch.Tensor):
        self.keys.index_copy_(2, slots, k)
        self.values.index_copy_(2, slots, v)
        if self.whole:
            return self.keys, self.values
        self.filled = min(self.keys.shape[2], self.filled + k.shape[2])
        return self.keys[:, :, : self.filled], self.values[:, :, : self.filled]


def expand_kv(x: torch.Tensor, repeats: int) -> torch.Tensor:
    """[B, kv_heads, S, D] -> [B, kv_heads * repeats, S, D]: each KV head repeated for its
    query heads (query head h reads KV head h // repeats)."""
    return x.repeat_interleave(repeats, dim=1)


class Attention(nn.Module):
    def __init__(self, shape: BlockShape, eps: float, use_sdpa: bool) -> None:
        super().__init__()
        n_head, n_local_heads, head_dim = shape.heads, shape.kv_heads, shape.head_dim
        self.n_head, self.n_local_heads, self.head_dim = n_head, n_local_heads, head_dim
        self.use_sdpa = bool(use_sdpa)
        self.wqkv = nn.Linear(
            shape.dim, (n_head + 2 * n_local_heads) * head_dim, bias=shape.qkv_bias
        )
        self.wo = nn.Linear(n_head * head_dim, shape.dim, bias=shape.o_bias)
        self.qk_norm = bool(shape.qk_norm)
        if self.qk_norm:
            self.q_norm = RMSNorm(head_dim, eps)
            self.k_norm = RMSNorm(head_dim, eps)

    def forward(
        self,
        x: torch.Tensor,
        table: torch.Tensor,
        mask: torch.Tensor,
        cache: StaticKV | None = None,
        slots: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """x [B, T, dim]; mask [T, S] bool (True = visible) over the keys attention sees (this
        call's, or the cache's after writing this call's at `slots`) -> [B, T, dim]."""
        b, t, _ = x.shape
        hq, hk, d = self.n_head, self.n_local_heads, self.head_dim
        q, k, v = self.wqkv(x).split((hq * d, hk * d, hk * d), dim=-1)
        q, k, v = q.view(b, t, hq, d), k.view(b, t, hk, d), v.view(b, t, hk, d)
        if self.qk_norm:
            q, k = self.q_norm(q), self.k_norm(k)
        q = apply_rope(q, table).transpose(1, 2)
        k = apply_rope(k, table).transpose(1, 2)
        v = v.transpose(1, 2)
        if cache is not None:
            k, v = cache.write(slots, k, v)
        k, v = expand_kv(k, hq // hk), expand_kv(v, hq // hk)
        if self.use_sdpa:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        else:
            scores = q @ k.transpose(-2, -1) / math.sqrt(d)
            out = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1) @ v
        return self.wo(out.transpose(1, 2).reshape(b, t, hq * d))


class FeedForward(nn.Module):
    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, shape: BlockShape, eps: float, sdpa: bool) -> None:
        super().__init__()
        self.attention = Attention(shape, eps, sdpa)
        self.feed_forward = FeedForward(shape.dim, shape.hidden)
        self.ffn_norm = RMSNorm(shape.dim, eps)
        self.attention_norm = RMSNorm(shape.dim, eps)

    def forward(self, x, table, mask, cache=None, slots=None):
        h = x + self.attention(self.attention_norm(x), table, mask, cache, slots)
        return h + self.feed_forward(self.ffn_norm(h))


def is_semantic(ids: torch.Tensor, config: Audio8Config) -> torch.Tensor:
    """True where a vocabulary id is a semantic id (eager reference only: never in a graph)."""
    return (ids >= config.semantic_begin_id) & (ids <= config.semantic_end_id)


def drawable_ids(config: Audio8Config) -> torch.Tensor:
    """The vocabulary ids the semantic mask keeps, in compact order: semantic ids, then eos."""
    c = config
    semantic = torch.arange(c.semantic_begin_id, c.semantic_end_id + 1)
    return torch.cat((semantic, torch.tensor([c.eos_token_id])))


def compact_logits(logits: torch.Tensor, config: Audio8Config) -> torch.Tensor:
    """Full-vocabulary logits [..., V] -> the 4,097 drawable rows [..., 4097]."""
    return logits.index_select(-1, drawable_ids(config))


# ---------------------------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------------------------


class Audio8LM(nn.Module):
    """Slow AR + fast AR with the publisher's parameter names (ArkttsModel's state dict)."""

    def __init__(self, config: Audio8Config) -> None:
        super().__init__()
        c = self.config = config
        self.embeddings = nn.Embedding(c.vocab_size, c.dim)
        self.codebook_embeddings = nn.Embedding(c.codebook_size * c.num_codebooks, c.dim)
        # The publisher's slow blocks attend by SDPA, its fast blocks by a written-out softmax.
        slow, fast = c.block_shape(), c.block_shape(fast=True)
        self.layers = nn.ModuleList(Block(slow, c.norm_eps, True) for _ in range(slow.layers))
        self.norm = RMSNorm(c.dim, c.norm_eps)
        self.fast_project_in = (
            nn.Linear(c.dim, c.fast_dim) if c.fast_dim != c.dim else nn.Identity()
        )
        self.fast_embeddings = nn.Embedding(c.codebook_size, c.fast_dim)
        self.fast_layers = nn.ModuleList(Block(fast, c.norm_eps, False) for _ in range(fast.layers))
        self.fast_norm = RMSNorm(c.fast_dim, c.norm_eps)
        self.fast_output = nn.Linear(c.fast_dim, c.codebook_size, bias=False)
        self.register_buffer(
            "freqs_cis", rope_table(c.max_seq_len, c.head_dim, c.rope_base), persistent=False
        )
        self.register_buffer(
            "fast_freqs_cis",
            rope_table(c.num_codebooks, c.fast_head_dim, c.rope_base),
            persistent=False,
        )

    # -- slow AR -------------------------------------------------------------------------------
    def embed(self, codes: torch.Tensor) -> torch.Tensor:
        """codes [B, 11, T] (int) -> [B, T, dim]."""
        c = self.config
        per_book = [
            self.codebook_embeddings(codes[:, book + 1] + book * c.codebook_size)
            for book in range(c.num_codebooks)
        ]
        summed = torch.stack(per_book, dim=1).sum(dim=1)
        semantic = is_semantic(codes[:, 0], c)
        return self.embeddings(codes[:, 0]) + torch.where(semantic[..., None], summed, 0.0)

    def slow_caches(self, batch: int = 1, length: int | None = None) -> list[StaticKV]:
        """Empty static slow-AR caches, `length` rows (default: max_seq_len)."""
        c = self.config
        rows = min(int(length or c.max_seq_len), c.max_seq_len)
        return [StaticKV(batch, c.n_local_heads, rows, c.head_dim, False) for _ in self.layers]

    def fast_caches(self, batch: int = 1) -> list[StaticKV]:
        """Empty static fast-AR caches, one slot per codebook position."""
        c = self.config
        n = c.num_codebooks
        return [
            StaticKV(batch, c.fast_n_local_heads, n, c.fast_head_dim, True)
            for _ in self.fast_layers
        ]

    def backbone(self, codes: torch.Tensor, caches: list[StaticKV]) -> torch.Tensor:
        """The slow AR over codes [B, 11, T] after the rows `caches` hold (written here) ->
        the last row's pre-norm hidden [B, dim]. Rows attend causally."""
        t = codes.shape[-1]
        start = caches[0].filled
        slots = torch.arange(start, start + t)
        table = self.freqs_cis[start : start + t]
        mask = torch.arange(start + t)[None, :] <= slots[:, None]  # [T, keys]
        x = self.embed(codes)
        for layer, cache in zip(self.layers, caches, strict=True):
            x = layer(x, table, mask, cache, slots)
        return x[:, -1]

    def slow(self, codes: torch.Tensor, caches: list[StaticKV] | None = None):
        """(post-norm hidden of the last row [B, dim], caches): the slow AR over codes after
        `caches` (new max_seq_len-row caches when None)."""
        caches = caches if caches is not None else self.slow_caches(codes.shape[0])
        return self.norm(self.backbone(codes, caches)), caches

    def slow_step(self, codes: torch.Tensor, caches: list[StaticKV]):
        """The publisher's slow step: (full-vocabulary logits [B, V], the fast AR's input
        hidden [B, dim]) of the last row of codes."""
        last = self.backbone(codes, caches)
        normed = self.norm(last)
        fast_hidden = normed if self.config.norm_fastlayer_input else last
        return self.full_logits(normed), fast_hidden

    def full_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """[B, dim] post-norm -> [B, vocab]: the tied head."""
        return F.linear(hidden, self.embeddings.weight)

    def semantic_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """[B, dim] post-norm -> [B, 4097] (semantic ids then eos)."""
        return compact_logits(self.full_logits(hidden), self.config)

    # -- fast AR -------------------------------------------------------------------------------
    def fast_step(self, x: torch.Tensor, position: int, caches: list[StaticKV]) -> torch.Tensor:
        """Fast-AR position `position` (x [B, 1, fast_dim]) over its static caches ->
        logits [B, 4096]."""
        slots = torch.tensor([position])
        table = self.fast_freqs_cis[position : position + 1]
        mask = torch.arange(self.config.num_codebooks)[None, :] <= slots[:, None]  # [1, 10]
        for layer, cache in zip(self.fast_layers, caches, strict=True):
            x = layer(x, table, mask, cache, slots)
        return self.fast_output(self.fast_norm(x))[:, -1]

    def fast_frame(
        self,
        hidden: torch.Tensor,
        semantic_id: torch.Tensor,
        u_fast: torch.Tensor,
        sampling: SamplingParams | None = None,
        forced: torch.Tensor | None = None,
        caches: list[StaticKV] | None = None,
    ):
        """The fast AR for one frame. hidden [B, dim]: the slow step's fast-AR input
        (`slow_step`); semantic_id [B] vocab id; u_fast [B, 9, 4096]; `caches` the static fast
        caches (new ones when None). `forced` [B, 10] feeds forced codes (teacher forcing)
        instead of the draws. Returns (draws [B, 10]: code_0 then the nine draws, logits
        [B, 9, 4096])."""
        c = self.config
        sp = sampling or SamplingParams()
        caches = caches if caches is not None else self.fast_caches(hidden.shape[0])
        self.fast_step(self.fast_project_in(hidden)[:, None], 0, caches)  # logits unused
        code = (semantic_id - c.semantic_begin_id).clamp(0, c.codebook_size - 1)
        draws, logits = [code], []
        feed = code if forced is None else forced[:, 0]
        for position in range(1, c.num_codebooks):
            lg = self.fast_step(self.fast_embeddings(feed)[:, None], position, caches)
            code = gumbel_draw(
                process(lg, sp.top_k, sp.top_p, sp.temperature), u_fast[:, position - 1]
            )
            draws.append(code)
            logits.append(lg)
            feed = code if forced is None else forced[:, position]
        return torch.stack(draws, dim=1), torch.stack(logits, dim=1)


# ---------------------------------------------------------------------------------------------
# Sampler (publisher's order; see the module docstring)
# ---------------------------------------------------------------------------------------------


def top_k_top_p_mask(scores: torch.Tensor, top_k: int, top_p: float) -> torch.Tensor:
    """The legacy joint filter on untempered scores [B, V] (sorting the whole row); -inf where
    removed."""
    ranked, order = torch.sort(scores, dim=-1, descending=True)
    cumulative = torch.softmax(ranked, dim=-1).cumsum(dim=-1)
    rank = torch.arange(scores.shape[-1], device=scores.device)
    limit = torch.tensor(top_p, dtype=cumulative.dtype)
    drop_ranked = (cumulative > limit) | (rank >= top_k)
    drop_ranked[..., 0] = False
    drop = torch.zeros_like(drop_ranked).scatter(-1, order, drop_ranked)
    return scores.masked_fill(drop, float("-inf"))


def process(scores: torch.Tensor, top_k: int, top_p: float, temperature: float) -> torch.Tensor:
    """Filter, then temperature (after the cut)."""
    kept = top_k_top_p_mask(scores.float(), top_k, top_p)
    return kept / max(float(temperature), MIN_TEMPERATURE)


def gumbel_draw(scores: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """argmax(softmax(scores) / -log u) per row; u in [0, 1) of the same shape."""
    p = torch.softmax(scores, dim=-1)
    return torch.argmax(p / -torch.log(u.to(p.dtype)), dim=-1)


def semantic_mask(logits: torch.Tensor, config: Audio8Config) -> torch.Tensor:
    """Full-vocabulary logits with everything but the semantic ids and eos at -inf."""
    c = config
    kept = torch.full_like(logits, float("-inf"))
    kept[..., c.semantic_begin_id : c.semantic_end_id + 1] = logits[
        ..., c.semantic_begin_id : c.semantic_end_id + 1
    ]
    kept[..., c.eos_token_id] = logits[..., c.eos_token_id]
    return kept


def compact_to_vocab(index: torch.Tensor, config: Audio8Config) -> torch.Tensor:
    """Compact row (0..4095 semantic, 4096 eos) -> vocabulary id."""
    return torch.where(
        index == config.semantic_count,
        torch.full_like(index, config.eos_token_id),
        index + config.semantic_begin_id,
    )


def expand_uniforms(u_compact: torch.Tensor, config: Audio8Config, fill: float = 0.5):
    """Compact u [..., 4097] -> full-vocabulary u (the masked entries get `fill`)."""
    c = config
    full = torch.full((*u_compact.shape[:-1], c.vocab_size), fill, dtype=u_compact.dtype)
    full[..., c.semantic_begin_id : c.semantic_end_id + 1] = u_compact[..., : c.semantic_count]
    full[..., c.eos_token_id] = u_compact[..., c.semantic_count]
    return full


@dataclass
class SemanticDraw:
    semantic: torch.Tensor  # [B] vocab id, after RAS
    normal: torch.Tensor  # [B] vocab id
    high: torch.Tensor  # [B] vocab id
    used_high: torch.Tensor  # [B] bool


def _ras(
    normal: torch.Tensor, high: torch.Tensor, window: torch.Tensor | None, config: Audio8Config
) -> SemanticDraw:
    """The RAS rule on two drawn vocabulary ids: `high` when `normal` is in the window and is a
    semantic id; step 0 (window None) returns `normal`."""
    if window is None:
        return SemanticDraw(normal, normal, high, torch.zeros_like(normal, dtype=torch.bool))
    repeated = (window == normal[:, None]).any(dim=1)
    use = repeated & is_semantic(normal, config)
    return SemanticDraw(torch.where(use, high, normal), normal, high, use)


def draw_semantic_full(
    logits_full: torch.Tensor,
    u_slow_full: torch.Tensor,
    window: torch.Tensor | None,
    config: Audio8Config,
    sampling: SamplingParams | None = None,
) -> SemanticDraw:
    """The publisher's slow draw: full-vocabulary logits [B, V] and u [B, 2, V], the semantic
    mask, the filter (a sort over the whole vocabulary), temperature, the race; `normal` and
    then `high` drawn every step, RAS choosing between them (`window` [B, W] vocab ids, -1 an
    empty slot, None at step 0)."""
    sp = sampling or SamplingParams.from_config(config)
    masked = semantic_mask(logits_full, config)
    normal = gumbel_draw(process(masked, sp.top_k, sp.top_p, sp.temperature), u_slow_full[:, 0])
    high = gumbel_draw(
        process(masked, sp.top_k, sp.ras_top_p, sp.ras_temperature), u_slow_full[:, 1]
    )
    return _ras(normal, high, window, config)


def draw_semantic(
    logits: torch.Tensor,
    u_slow: torch.Tensor,
    window: torch.Tensor | None,
    config: Audio8Config,
    sampling: SamplingParams | None = None,
) -> SemanticDraw:
    """The same draw on the compact rows: logits [B, 4097], u_slow [B, 2, 4097] (a helper for
    tests that hold compact == full; `generate` draws with `draw_semantic_full`)."""
    sp = sampling or SamplingParams.from_config(config)
    normal = gumbel_draw(process(logits, sp.top_k, sp.top_p, sp.temperature), u_slow[:, 0])
    high = gumbel_draw(process(logits, sp.top_k, sp.ras_top_p, sp.ras_temperature), u_slow[:, 1])
    c = config
    return _ras(compact_to_vocab(normal, c), compact_to_vocab(high, c), window, c)


def next_window(window: torch.Tensor | None, semantic: torch.Tensor, size: int) -> torch.Tensor:
    """The publisher's `previous` update, -1 standing for its zeros (which match no draw).

    None (after step 0) -> all empty, the step's token NOT added; else roll left, append.
    """
    if window is None:
        return torch.full((semantic.shape[0], size), -1, dtype=torch.long)
    return torch.cat((window[:, 1:], semantic[:, None].long()), dim=1)


# ---------------------------------------------------------------------------------------------
# generate
# ---------------------------------------------------------------------------------------------


@dataclass
class FrameRecord:
    step: int
    position: int  # the KV row of the column fed to produce this frame's logits
    logits: np.ndarray  # [4097] slow logits (semantic ids, eos)
    window: np.ndarray  # [W] vocab ids seen by RAS (-1 empty); all -1 at step 0 (None there)
    normal: int
    high: int
    semantic: int  # vocab id after RAS
    used_high: bool
    codes: np.ndarray  # [10] code_0 + nine fast draws (eos frame: code_0 clamped)
    fast_logits: np.ndarray  # [9, 4096]
    u_slow: np.ndarray  # [2, 4097]
    u_fast: np.ndarray  # [9, 4096]


@dataclass
class Generation:
    codes: np.ndarray  # [10, frames] emitted frames (eos frame excluded)
    frames: list[FrameRecord] = field(default_factory=list)
    finished: bool = False  # eos drawn
    prefill_logits: np.ndarray | None = None  # [4097] of the last prompt row


UniformsFn = Callable[[int], tuple[np.ndarray, np.ndarray]]


def seeded_uniforms(seed: int, config: Audio8Config) -> UniformsFn:
    """u_slow [2, 4097], u_fast [9, 4096] per step from one NumPy generator, in (0, 1)."""
    rng = np.random.default_rng(seed)
    n_slow = config.semantic_count + 1
    n_fast = config.num_codebooks - 1

    def fn(step: int):
        u_s = rng.random((2, n_slow), dtype=np.float32)
        u_f = rng.random((n_fast, config.codebook_size), dtype=np.float32)
        tiny = np.finfo(np.float32).tiny
        return np.maximum(u_s, tiny), np.maximum(u_f, tiny)

    return fn


def _prompt_rows(prompt: np.ndarray | torch.Tensor, config: Audio8Config) -> torch.Tensor:
    """The prompt as a long tensor [11, P], P below the context length."""
    c = config
    prompt = torch.as_tensor(np.asarray(prompt), dtype=torch.long)
    if prompt.dim() != 2 or prompt.shape[0] != c.num_codebooks + 1:
        raise ValueError(f"prompt must be [{c.num_codebooks + 1}, P], got {list(prompt.shape)}")
    if prompt.shape[1] >= c.max_seq_len:
        raise ValueError(f"prompt length {prompt.shape[1]} must be smaller than {c.max_seq_len}")
    return prompt


def _uniform_tensors(
    uniforms: UniformsFn | Sequence[tuple[np.ndarray, np.ndarray]] | None, config: Audio8Config
) -> Callable[[int], tuple[torch.Tensor, torch.Tensor]]:
    """step -> (u_slow [1, 2, 4097], u_fast [1, 9, 4096]) float32 tensors, from a function or a
    recorded list (default: `seeded_uniforms(0)`)."""
    if uniforms is None:
        uniforms = seeded_uniforms(0, config)
    get_u = uniforms if callable(uniforms) else (lambda k: uniforms[k])

    def at(step: int) -> tuple[torch.Tensor, torch.Tensor]:
        u_s, u_f = get_u(step)
        u_s = torch.as_tensor(np.asarray(u_s, np.float32))[None]
        u_f = torch.as_tensor(np.asarray(u_f, np.float32))[None]
        return u_s, u_f

    return at


def _forced_column(forced: np.ndarray | None, step: int) -> torch.Tensor | None:
    """The teacher-forced column [1, 11] of `step`, or None when not forcing."""
    return None if forced is None else torch.as_tensor(np.asarray(forced[step]))[None].long()


def _fast_codes(
    model: Audio8LM,
    fast_hidden: torch.Tensor,
    d: SemanticDraw,
    col: torch.Tensor | None,
    u_f: torch.Tensor,
    sp: SamplingParams,
    caches: list[StaticKV],
) -> tuple[torch.Tensor, torch.Tensor]:
    """The fast AR on the drawn semantic, or on the forced column's semantic and codes."""
    if col is None:
        return model.fast_frame(fast_hidden, d.semantic, u_f, sp, None, caches)
    return model.fast_frame(fast_hidden, col[:, 0], u_f, sp, col[:, 1:], caches)


def _frame_record(
    step: int,
    position: int,
    window: torch.Tensor | None,
    ras_window: int,
    *,
    logits: torch.Tensor,
    draw: SemanticDraw,
    codes: torch.Tensor,
    fast_logits: torch.Tensor,
    u_slow: torch.Tensor,
    u_fast: torch.Tensor,
) -> FrameRecord:
    """One step's record (batch row 0); `window` None at step 0 is recorded as all empty."""
    return FrameRecord(
        step=step,
        position=position,
        logits=logits[0].numpy(),
        window=(np.full(ras_window, -1) if window is None else window[0].numpy()),
        normal=int(draw.normal),
        high=int(draw.high),
        semantic=int(draw.semantic),
        used_high=bool(draw.used_high),
        codes=codes[0].numpy(),
        fast_logits=fast_logits[0].numpy(),
        u_slow=u_slow[0].numpy(),
        u_fast=u_fast[0].numpy(),
    )


def _fed_column(
    d: SemanticDraw, codes: torch.Tensor, col: torch.Tensor | None, eos_token_id: int
) -> tuple[torch.Tensor, torch.Tensor] | None:
    """The frame's column [1, 11] and the semantic the RAS window takes: the forced column, else
    the drawn semantic and codes; None when the draw is eos (generation stops)."""
    if col is not None:
        return col, col[:, 0]
    if int(d.semantic) == eos_token_id:
        return None
    return torch.cat((d.semantic[:, None], codes), dim=1), d.semantic


@torch.no_grad()
def generate(
    model: Audio8LM,
    prompt: np.ndarray | torch.Tensor,
    max_frames: int,
    uniforms: UniformsFn | Sequence[tuple[np.ndarray, np.ndarray]] | None = None,
    sampling: SamplingParams | None = None,
    forced: np.ndarray | None = None,
) -> Generation:
    """The publisher's `generate` for one prompt [11, P]: one slow pass over the prompt, then
    one frame per step (full-vocabulary draw with RAS, fast AR over its static caches).

    `uniforms` is a function step -> (u_slow [2,4097], u_fast [9,4096]) or a recorded list of
    such pairs (default: `seeded_uniforms(0)`). `forced` [frames, 11] teacher-forces each frame's
    column ([semantic id, code_0..code_9]): the draws are still made and recorded, but the forced
    column is what the fast AR and the next slow step are fed (no eos stop while forcing).
    """
    c = model.config
    sp = sampling or SamplingParams.from_config(c)
    prompt = _prompt_rows(prompt, c)
    width = prompt.shape[1]
    max_frames = min(int(max_frames), c.max_seq_len - width)
    get_u = _uniform_tensors(uniforms, c)

    slow_caches = model.slow_caches(1, width + max(max_frames, 0))
    fast_caches = model.fast_caches(1)
    logits, fast_hidden = model.slow_step(prompt[None], slow_caches)
    out = Generation(codes=np.zeros((c.num_codebooks, 0), np.int64))
    out.prefill_logits = compact_logits(logits, c)[0].numpy()
    window = None
    emitted = []
    for step in range(max_frames):
        u_s, u_f = get_u(step)
        d = draw_semantic_full(logits, expand_uniforms(u_s, c), window, c, sp)
        col = _forced_column(forced, step)
        codes, fast_logits = _fast_codes(model, fast_hidden, d, col, u_f, sp, fast_caches)
        out.frames.append(
            _frame_record(
                step,
                width - 1 + step,
                window,
                sp.ras_window,
                logits=compact_logits(logits, c),
                draw=d,
                codes=codes,
                fast_logits=fast_logits,
                u_slow=u_s,
                u_fast=u_f,
            )
        )
        fed = _fed_column(d, codes, col, c.eos_token_id)
        if fed is None:
            out.finished = True
            break
        column, semantic_fed = fed
        emitted.append(column[0, 1:].numpy())
        window = next_window(window, semantic_fed, sp.ras_window)
        if step + 1 == max_frames:
            break
        logits, fast_hidden = model.slow_step(column[:, :, None], slow_caches)
    if emitted:
        out.codes = np.stack(emitted, axis=1)
    return out


__all__ = [
    "Audio8LM",
    "FrameRecord",
    "Generation",
    "MIN_TEMPERATURE",
    "SamplingParams",
    "SemanticDraw",
    "TEMPERATURE",
    "TOP_K",
    "TOP_P",
    "compact_logits",
    "draw_semantic",
    "draw_semantic_full",
    "expand_uniforms",
    "generate",
    "gumbel_draw",
    "next_window",
    "process",
    "seeded_uniforms",
    "top_k_top_p_mask",
]
