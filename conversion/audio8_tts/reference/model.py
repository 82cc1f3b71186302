"""The reference LM, `Audio8LM`: the slow AR and the fast AR with the publisher's parameter names
(ArkttsModel's state dict), built from layers.py's blocks; the fast AR draws each codebook with
sampler.py. generation.py runs it frame by frame."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..config import Audio8Config
from ..sampling import SamplingParams
from .layers import Block, RMSNorm, StaticKV, compact_logits, is_semantic, rope_table
from .sampler import gumbel_draw, process

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
