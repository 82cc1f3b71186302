"""The `ar` graph's own transformer parts, export-ready, written apart from `reference/`.

The graph (`ar/graphs.py`) and the reference share the checkpoint's weights and nothing else:
these modules carry the checkpoint's names (`wqkv`, `wo`, `w1..w3`, `attention_norm`, ...), so
`Audio8ARGraph(config, state_dict)` loads a state dict unchanged, but every computation here is
this file's own. What each part computes (the published model's arithmetic, in graph form):

* `RMSNorm`: in float32, `x * rsqrt(mean(x * x) + eps)`, back to the input dtype, times the
  weight. A square as a product, not `pow` (docs/speed.md); no `F.normalize`.
* `RopeTable` / `rotate_pairs`: GPT-J pairs (dims 2i and 2i+1 turn together) by the angle
  pos * base^(-2i/d), its cos and sin rounded to bfloat16 (the published tables are bf16 in an
  fp32 model too) and held as float32. The table stores each pair's cos / sin twice ([L, D]) so
  the turn is two products and a sum: `x * cos + partner(x) * sin`, the partner of (a, b)
  being (-b, a).
* `Attention`: fused `wqkv` (optional per-head qk RMSNorm), the rotation, GQA by folding the
  query heads that read one KV head into the rows of one matmul ([B, kv, r·T, D] against
  [B, kv, S, D]: query head h reads KV head h // r, and the KV rows are never copied per query
  head), a boolean mask (True = may attend) as -inf before the softmax, then `wo`.
* `FeedForward`: SwiGLU, `w2(silu(w1 x) * w3 x)`.
* `embed_columns`: the token embedding of row 0 plus, where row 0 is a semantic id, the sum of
  the ten codebook embeddings (book i at offset i * 4096 in one table). The semantic test is an
  int32 range test by clamp (`clamp(lo, hi) == id`): an int64 compare -> bool chain can corrupt
  another live tensor after lowering (coreai-torch#11).
* the head: the tied embedding's 4,097 drawable rows (semantic ids, then eos) as a bias-free
  `nn.Linear` (`head_rows`), so the fp32 export's pre-transposed-Linear rewrite applies to it.

Weights live in `nn.Linear` / `nn.Embedding` modules so `precision.prepare_module`'s fp32 rewrite
(`rewrites.pretransposed_linears`) still reaches every projection.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ..config import Audio8Config, BlockShape


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.eps = float(eps)
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x32 = x.to(torch.float32)
        mean_square = torch.mean(x32 * x32, dim=-1, keepdim=True)
        return (x32 * torch.rsqrt(mean_square + self.eps)).to(x.dtype) * self.weight


def bf16_rope_pairs(length: int, head_dim: int, base: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(cos, sin) [length, head_dim // 2] of pos * base^(-2i/d) (float32 angles), each value
    rounded to bfloat16 and held as float32."""
    pairs = head_dim // 2
    exponent = torch.arange(pairs, dtype=torch.float32) * 2 / head_dim
    frequency = 1.0 / (float(base) ** exponent)
    angle = torch.arange(length, dtype=torch.float32)[:, None] * frequency[None, :]
    rounded = [f(angle).to(torch.bfloat16).to(torch.float32) for f in (torch.cos, torch.sin)]
    return rounded[0], rounded[1]


class RopeTable(nn.Module):
    """The bf16-rounded rotation of `length` positions, each pair's cos / sin stored twice:
    buffers `cos`, `sin` [length, head_dim] (non-persistent: not checkpoint keys)."""

    def __init__(self, length: int, head_dim: int, base: float) -> None:
        super().__init__()
        cos, sin = bf16_rope_pairs(length, head_dim, base)
        self.register_buffer("cos", torch.stack((cos, cos), dim=-1).flatten(1), persistent=False)
        self.register_buffer("sin", torch.stack((sin, sin), dim=-1).flatten(1), persistent=False)

    def rows(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(cos, sin) [T, head_dim] at int64 `positions` [T]."""
        return self.cos.index_select(0, positions), self.sin.index_select(0, positions)

    def row(self, position: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(cos, sin) [1, head_dim] at a fixed position."""
        return self.cos[position : position + 1], self.sin[position : position + 1]


def rotate_pairs(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x [B, T, H, D] turned pair by pair; cos / sin [T, D] (`RopeTable`). Float32 inside."""
    b, t, h, d = x.shape
    x32 = x.to(torch.float32)
    halves = x32.reshape(b, t, h, d // 2, 2)
    partner = torch.stack((-halves[..., 1], halves[..., 0]), dim=-1).reshape(b, t, h, d)
    turned = x32 * cos[:, None, :] + partner * sin[:, None, :]
    return turned.to(x.dtype)


class Attention(nn.Module):
    """Checkpoint names: `wqkv` (query, key, value projections in one), `wo`, optional
    `q_norm` / `k_norm`. `qkv` projects and rotates; `mix` attends over the keys it is given."""

    def __init__(self, shape: BlockShape, eps: float) -> None:
        super().__init__()
        heads, kv_heads, head_dim = shape.heads, shape.kv_heads, shape.head_dim
        if heads % kv_heads:
            raise ValueError(f"{heads} query heads do not group over {kv_heads} KV heads")
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, head_dim
        self.group = heads // kv_heads  # query heads per KV head
        self.scale = 1.0 / math.sqrt(head_dim)
        self.wqkv = nn.Linear(shape.dim, (heads + 2 * kv_heads) * head_dim, bias=shape.qkv_bias)
        self.wo = nn.Linear(heads * head_dim, shape.dim, bias=shape.o_bias)
        self.qk_norm = bool(shape.qk_norm)
        if self.qk_norm:
            self.q_norm = RMSNorm(head_dim, eps)
            self.k_norm = RMSNorm(head_dim, eps)

    def qkv(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor):
        """x [B, T, dim] -> q [B, heads, T, D], k and v [B, kv_heads, T, D]; q and k turned."""
        b, t, _ = x.shape
        d = self.head_dim
        width_q, width_kv = self.heads * d, self.kv_heads * d
        fused = self.wqkv(x)
        q = fused[..., :width_q].reshape(b, t, self.heads, d)
        k = fused[..., width_q : width_q + width_kv].reshape(b, t, self.kv_heads, d)
        v = fused[..., width_q + width_kv :].reshape(b, t, self.kv_heads, d)
        if self.qk_norm:
            q = self.q_norm(q)
            k = self.k_norm(k)
        q = rotate_pairs(q, cos, sin).transpose(1, 2)
        k = rotate_pairs(k, cos, sin).transpose(1, 2)
        return q, k, v.transpose(1, 2)

    def mix(self, q, k, v, visible: torch.Tensor | None) -> torch.Tensor:
        """Attention of q [B, heads, T, D] over k, v [B, kv_heads, S, D] -> [B, T, dim].

        `visible` [group·T, S] bool (True = may attend; its rows are the T query rows repeated
        once per query head of a group, `grouped_rows`) or None (every key visible)."""
        b, _, t, d = q.shape
        folded = q.reshape(b, self.kv_heads, self.group * t, d)
        scores = torch.matmul(folded, k.transpose(-1, -2)) * self.scale
        if visible is not None:
            scores = scores.masked_fill(~visible, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        out = torch.matmul(weights, v).reshape(b, self.heads, t, d)
        return self.wo(out.transpose(1, 2).reshape(b, t, self.heads * d))


def grouped_rows(rows: torch.Tensor, group: int) -> torch.Tensor:
    """A per-query-row tensor [T, ...] repeated for the `group` query heads that share a KV head
    (the row order of `Attention.mix`'s folded queries)."""
    return rows.repeat(group, *([1] * (rows.dim() - 1)))


class FeedForward(nn.Module):
    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate = F.silu(self.w1(x))
        return self.w2(gate * self.w3(x))


class Block(nn.Module):
    """Pre-norm block; the caller runs `attention` (it owns the keys), `finish` does the rest."""

    def __init__(self, shape: BlockShape, eps: float) -> None:
        super().__init__()
        self.attention = Attention(shape, eps)
        self.feed_forward = FeedForward(shape.dim, shape.hidden)
        self.attention_norm = RMSNorm(shape.dim, eps)
        self.ffn_norm = RMSNorm(shape.dim, eps)

    def finish(self, x: torch.Tensor, attended: torch.Tensor) -> torch.Tensor:
        """The residual after attention, then the feed-forward's residual."""
        mid = x + attended
        return mid + self.feed_forward(self.ffn_norm(mid))


def blocks(c: Audio8Config, fast: bool = False) -> nn.ModuleList:
    """The slow AR's blocks, or with `fast` the fast AR's."""
    shape = c.block_shape(fast)
    return nn.ModuleList(Block(shape, c.norm_eps) for _ in range(shape.layers))


def embed_columns(
    tokens: nn.Embedding, books: nn.Embedding, codes: torch.Tensor, c: Audio8Config
) -> torch.Tensor:
    """codes [B, 11, T] int (row 0 ids >= 0, rows 1..10 codes) -> [B, T, dim]."""
    ids = codes[:, 0]
    step = torch.arange(c.num_codebooks, dtype=torch.int64) * c.codebook_size
    book_rows = codes[:, 1:].to(torch.int64) + step[None, :, None]  # [B, 10, T]
    code_sum = books(book_rows).sum(dim=1)  # [B, T, dim]
    ids32 = ids.to(torch.int32)
    semantic = ids32.clamp(c.semantic_begin_id, c.semantic_end_id) == ids32
    return tokens(ids.to(torch.int64)) + torch.where(semantic[..., None], code_sum, 0.0)


def head_rows(embeddings: torch.Tensor, c: Audio8Config) -> torch.Tensor:
    """The tied head's drawable rows [4097, dim]: the semantic ids' rows, then eos's."""
    semantic = embeddings[c.semantic_begin_id : c.semantic_end_id + 1]
    return torch.cat((semantic, embeddings[c.eos_token_id : c.eos_token_id + 1]), dim=0)


__all__ = [
    "Attention",
    "Block",
    "FeedForward",
    "RMSNorm",
    "RopeTable",
    "bf16_rope_pairs",
    "blocks",
    "embed_columns",
    "grouped_rows",
    "head_rows",
    "rotate_pairs",
]
