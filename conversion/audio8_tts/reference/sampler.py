"""The reference's sampler in the publisher's order: the semantic mask, the legacy joint top-k /
top-p filter, temperature, the Gumbel race on given uniforms, and RAS over the 10-token window
(the order and the window's quirk: the package docstring); model.py's fast AR and
generation.py's loop draw with it."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..config import Audio8Config
from ..sampling import MIN_TEMPERATURE, SamplingParams
from .layers import is_semantic

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
