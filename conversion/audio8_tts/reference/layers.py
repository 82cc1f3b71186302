"""The reference LM's building blocks under the publisher's names: RMSNorm, the bf16-rounded
GPT-J RoPE, static KV caches, GQA attention, SwiGLU, the block, and the semantic-id helpers;
model.py assembles them into `Audio8LM` (the facts they follow: the package docstring)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ..config import Audio8Config, BlockShape

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
