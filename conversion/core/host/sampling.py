"""Token sampling: logits processors and a Gumbel-max draw, on the host and inside a graph.

The two forms draw the SAME token from the same logits and the same uniforms `u`:

- host (NumPy): `process_logits` returns the masked, temperature-scaled scores; `sample` draws;
- in-graph (`GumbelSampler`, an exportable `nn.Module`): no full-vocabulary sort, no `rand*`, no
  `multinomial` (the Core AI converter takes none of them) - `topk`, `cumsum`, `gather`, `where`.

The draw is the exponential-race form of Gumbel-max:

    token = argmax_i( p_i / E_i ),   E_i = -log(u_i),   u_i ~ Uniform(0, 1) one per vocabulary row

with `p` the processed distribution (any positive multiple of it: we use exp(score - max score)).
It is exactly a draw from `p` (E_i are Exp(1); the winner of an exponential race with rates p_i
is i with probability p_i), and because `u` is an input, a recorded `u` replays a draw exactly.
`u` is clipped to [smallest normal, 1 - 2**-24] first so that u == 0 or u == 1 cannot make a
0/0; no other float32 value in (0, 1) is changed by the clip.

Order of the processors (`SamplingConfig.order`, a `SamplingOrder`). The default, `HF_ORDER`,
is transformers' `generate`: CFG -> repetition penalty -> temperature -> top-k -> top-p -> min-p
-> draw. top-p is computed on the distribution left by top-k (renormalised), keeps the smallest
prefix whose cumulative probability reaches top_p (a token is kept while the mass strictly before
it is < top_p, so the best token is always kept), min-p removes tokens with p < min_p * p_max on
the temperature-scaled distribution. Publishers differ from it in a few places, each a knob of
`SamplingOrder` (all False is `HF_ORDER`); a model's own order lives in that model's folder:

- `filter_on_raw_scores`: top-k ranks, and top-p computes its probabilities on, the scores BEFORE
  temperature (temperature still scales the distribution that is drawn from and that min-p sees);
- `min_p_before_top_p`: min-p runs before top-p, so top-p sees the distribution renormalised over
  what min-p kept (and over what top-k kept);
- `top_p_over_whole_vocab`: top-p's probabilities are normalised over the whole vocabulary, not
  over what top-k (or an earlier min-p) left;
- `top_p_drops_crossing_token`: top-p removes a token once the cumulative sum INCLUDING it exceeds
  top_p (`cum > top_p`), so the token that crosses top_p is dropped; by default it is kept (the
  mass before it is < top_p). Either way the best token is always kept.
- `penalty_after_filters`: the repetition penalty runs LAST, on the temperature-scaled scores
  that the filters kept (-inf stays -inf), so top-k / top-p / min-p choose among the unpenalised
  scores and the penalty only reshapes the distribution over what they kept. (The penalty's
  value is the same either way up to float rounding: x * pen / T vs (x / T) * pen.)

CFG is `cond + w * (cond - uncond)`. The repetition penalty is transformers':
a token present in `previous_tokens` has its logit multiplied by the penalty when negative and
divided by it otherwise (once, however often it occurs); -1 entries are padding.

The candidate bound: top-p needs a sort, and the graph only sorts the top `candidates` tokens
(`topk`). When top-p is on and top-k is off, BOTH forms therefore only ever keep tokens among the
`candidates` best (by the score top-p is computed on); top-p's normaliser still runs over the whole
vocabulary (or whatever top-k / min-p left), so the cut itself is exact, and only a top-p set
longer than `candidates` is truncated. When top-k is on, the candidates are exactly the top_k
tokens (`candidates` is not used); with neither top-k nor top-p the draw runs over the whole
vocabulary. Ties between equal scores at the top-k boundary are broken by index order (the host)
or by `topk` (the graph); transformers keeps all of them. `process_logits(..., candidates=None)`
drops the bound, so its count of finite scores says how many tokens the bound would truncate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

DEFAULT_CANDIDATES = 50

# The clip that keeps -log(u) finite and positive: only u == 0 and u == 1 are moved by it.
U_MIN = float(np.finfo(np.float32).tiny)
U_MAX = float(np.float32(1.0) - np.float32(2.0**-24))


@dataclass(frozen=True)
class SamplingOrder:
    """Where a publisher's processors differ from transformers' `generate` (the module docstring).

    Every knob False is `HF_ORDER`. A model whose publisher samples differently defines its own
    instance in its folder and passes it as `SamplingConfig.order`.
    """

    filter_on_raw_scores: bool = False  # top-k / top-p on the untempered scores
    min_p_before_top_p: bool = False  # min-p first; top-p renormalises over what it kept
    top_p_over_whole_vocab: bool = False  # top-p's normaliser: the whole vocabulary
    top_p_drops_crossing_token: bool = False  # keep while cum <= top_p (not: mass before < top_p)
    penalty_after_filters: bool = False  # repetition penalty last, on the kept tempered scores


HF_ORDER = SamplingOrder()  # transformers' generate


@dataclass(frozen=True)
class SamplingConfig:
    """What to do to the logits before the draw. `top_k` 0, `top_p` 1.0 and `min_p` 0.0 mean off."""

    temperature: float = 1.0
    top_k: int | None = None
    top_p: float | None = None
    min_p: float | None = None
    repetition_penalty: float = 1.0
    cfg_weight: float | None = None
    order: SamplingOrder = HF_ORDER

    def __post_init__(self) -> None:
        if not self.temperature > 0:
            raise ValueError(f"temperature must be > 0, got {self.temperature}")
        if self.top_k is not None and self.top_k < 0:
            raise ValueError(f"top_k must be >= 0, got {self.top_k}")
        if self.top_p is not None and not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.min_p is not None and not 0.0 <= self.min_p <= 1.0:
            raise ValueError(f"min_p must be in [0, 1], got {self.min_p}")
        if not self.repetition_penalty > 0:
            raise ValueError(f"repetition_penalty must be > 0, got {self.repetition_penalty}")
        if not isinstance(self.order, SamplingOrder):
            raise ValueError(f"order must be a SamplingOrder, got {self.order!r}")

    @property
    def uses_top_k(self) -> bool:
        return bool(self.top_k)

    @property
    def uses_top_p(self) -> bool:
        return self.top_p is not None and self.top_p < 1.0

    @property
    def uses_min_p(self) -> bool:
        return bool(self.min_p)

    @property
    def uses_penalty(self) -> bool:
        return self.repetition_penalty != 1.0

    @property
    def uses_cfg(self) -> bool:
        return self.cfg_weight is not None

    def candidate_count(self, vocab_size: int, candidates: int | None) -> int:
        """How many sorted tokens the filters look at (the vocabulary when unbounded)."""
        if self.uses_top_k:
            return min(int(self.top_k), vocab_size)
        if self.uses_top_p and candidates is not None:
            return min(int(candidates), vocab_size)
        return vocab_size


# ---------------------------------------------------------------------------------------------
# Host form (NumPy, float32 throughout so that it rounds like the float32 graph)
# ---------------------------------------------------------------------------------------------


def cfg_combine(cond: np.ndarray, uncond: np.ndarray, w: float) -> np.ndarray:
    """Classifier-free guidance: cond + w * (cond - uncond)."""
    cond = np.asarray(cond, dtype=np.float32)
    uncond = np.asarray(uncond, dtype=np.float32)
    return cond + np.float32(w) * (cond - uncond)


def _seen_mask(previous_tokens: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    batch, vocab = shape
    prev = np.asarray(previous_tokens).astype(np.int64)
    prev = prev.reshape(1, -1) if prev.ndim == 1 else prev
    if prev.shape[0] != batch:
        raise ValueError(f"previous_tokens has {prev.shape[0]} rows, logits {batch}")
    if (prev >= vocab).any() or (prev < -1).any():
        lo, hi = prev.min(), prev.max()
        raise ValueError(f"previous_tokens must be in [-1, {vocab}), got {lo}..{hi}")
    rows = np.broadcast_to(np.arange(batch)[:, None], prev.shape)
    valid = prev >= 0
    seen = np.zeros(shape, dtype=bool)
    seen[rows[valid], prev[valid]] = True
    return seen


def apply_repetition_penalty(
    logits: np.ndarray, previous_tokens: np.ndarray, penalty: float
) -> np.ndarray:
    """transformers' rule: seen tokens' logits x penalty when < 0, / penalty otherwise; -1 = pad."""
    x = np.asarray(logits, dtype=np.float32)
    x2 = x.reshape(1, -1) if x.ndim == 1 else x
    seen = _seen_mask(previous_tokens, x2.shape)
    pen = np.float32(penalty)
    out = np.where(seen, np.where(x2 < 0, x2 * pen, x2 / pen), x2).astype(np.float32)
    return out.reshape(x.shape)


def _top_p_keep_sorted(
    r_sorted: np.ndarray, total: np.ndarray, top_p: float, drop_crossing: bool
) -> np.ndarray:
    """Which sorted positions top-p keeps, given relative probabilities and their normaliser."""
    p = r_sorted / total
    cum = np.cumsum(p, axis=-1, dtype=np.float32)
    # Default: keep while the mass before the token is < top_p; else drop once cum > top_p.
    keep = cum <= np.float32(top_p) if drop_crossing else (cum - p) < np.float32(top_p)
    keep[:, 0] = True
    return keep


def _penalty_at(
    x: np.ndarray, cfg: SamplingConfig, previous_tokens: np.ndarray | None, after_filters: bool
) -> np.ndarray:
    """The repetition penalty if the order puts it at this stage (before or after the filters)."""
    if not cfg.uses_penalty or cfg.order.penalty_after_filters != after_filters:
        return x
    if previous_tokens is None:
        raise ValueError("repetition_penalty != 1: previous_tokens is required")
    return apply_repetition_penalty(x, previous_tokens, cfg.repetition_penalty)


def process_logits(
    logits: np.ndarray,
    cfg: SamplingConfig,
    previous_tokens: np.ndarray | None = None,
    uncond_logits: np.ndarray | None = None,
    candidates: int | None = DEFAULT_CANDIDATES,
) -> np.ndarray:
    """Masked, temperature-scaled scores ([V] or [B, V] float32; -inf where a filter removed).

    `candidates` is the graph's bound on the tokens top-p can keep (see the module docstring);
    pass the same value as the `GumbelSampler`, or None for the unbounded processors.
    """
    x = np.asarray(logits, dtype=np.float32)
    squeeze = x.ndim == 1
    x = x.reshape(1, -1) if squeeze else x
    batch, vocab = x.shape
    if cfg.uses_cfg:
        if uncond_logits is None:
            raise ValueError("cfg_weight is set: uncond_logits is required")
        x = cfg_combine(x, np.asarray(uncond_logits, np.float32).reshape(x.shape), cfg.cfg_weight)
    x = _penalty_at(x, cfg, previous_tokens, after_filters=False)
    order = cfg.order
    s = x / np.float32(cfg.temperature)
    f = x if order.filter_on_raw_scores else s  # the scores top-k / top-p are computed on

    keep = np.ones((batch, vocab), dtype=bool)
    if cfg.uses_top_k or cfg.uses_top_p:
        by_score = np.argsort(-f, axis=-1, kind="stable")
        rank = np.empty_like(by_score)
        np.put_along_axis(rank, by_score, np.arange(vocab)[None, :].repeat(batch, 0), axis=-1)
        if cfg.uses_top_k:
            keep &= rank < cfg.top_k

    def min_p_keep() -> np.ndarray:
        return np.exp(s - s.max(axis=-1, keepdims=True)) >= np.float32(cfg.min_p)

    if cfg.uses_min_p and order.min_p_before_top_p:
        keep &= min_p_keep()
    if cfg.uses_top_p:
        r = np.exp(f - f.max(axis=-1, keepdims=True))
        # The normaliser: what is left so far, or the whole vocabulary.
        basis = np.ones_like(keep) if order.top_p_over_whole_vocab else keep
        total = np.where(basis, r, np.float32(0)).sum(axis=-1, keepdims=True, dtype=np.float32)
        r_sorted = np.take_along_axis(np.where(basis, r, np.float32(0)), by_score, axis=-1)
        drop_crossing = order.top_p_drops_crossing_token
        kept_sorted = _top_p_keep_sorted(r_sorted, total, cfg.top_p, drop_crossing)
        keep &= np.take_along_axis(kept_sorted, rank, axis=-1)
        if candidates is not None and not cfg.uses_top_k:
            keep &= rank < candidates
    if cfg.uses_min_p and not order.min_p_before_top_p:
        keep &= min_p_keep()

    out = np.where(keep, s, np.float32(-np.inf)).astype(np.float32)
    out = _penalty_at(out, cfg, previous_tokens, after_filters=True)
    return out[0] if squeeze else out


def gumbel_argmax(scores: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """argmax(exp(score - max) / -log(u)) per row: the exponential-race draw, scores may be -inf."""
    scores = np.asarray(scores, dtype=np.float32)
    u = np.clip(np.asarray(uniforms, dtype=np.float32), U_MIN, U_MAX).reshape(scores.shape)
    w = np.exp(scores - scores.max(axis=-1, keepdims=True)) / -np.log(u)
    return np.argmax(w, axis=-1)


def sample(
    logits: np.ndarray,
    uniforms: np.ndarray,
    cfg: SamplingConfig,
    previous_tokens: np.ndarray | None = None,
    uncond_logits: np.ndarray | None = None,
    candidates: int | None = DEFAULT_CANDIDATES,
) -> int | np.ndarray:
    """Draw one token per row. `uniforms` (same shape as logits, in (0, 1)) IS the randomness:
    the same logits and the same uniforms give the same token here and in `GumbelSampler`."""
    scores = process_logits(logits, cfg, previous_tokens, uncond_logits, candidates)
    drawn = gumbel_argmax(scores, uniforms)
    return int(drawn) if np.ndim(drawn) == 0 else drawn.astype(np.int64)


# ---------------------------------------------------------------------------------------------
# In-graph form (exportable; float32 inside whatever the graph's precision)
# ---------------------------------------------------------------------------------------------


class GumbelSampler(nn.Module):
    """The host `sample` as a graph: logits [B, V], uniforms [B, V] -> token ids [B] int32.

    Optional inputs: `previous_tokens` [B, W] int32 (-1 = none; needed when the repetition
    penalty is on) and `uncond_logits` [B, V] (needed when cfg_weight is set). For a standalone
    export pass exactly the inputs in `input_names`, in that order: a float third positional
    input is taken as `uncond_logits` so that a CFG-only sampler needs no dummy token window.
    """

    def __init__(
        self, vocab_size: int, config: SamplingConfig, candidates: int = DEFAULT_CANDIDATES
    ) -> None:
        super().__init__()
        self.vocab_size = int(vocab_size)
        self.config = config
        self.candidates = int(candidates)
        self.k = config.candidate_count(self.vocab_size, self.candidates)
        self.sorts = config.uses_top_k or config.uses_top_p

    @property
    def input_names(self) -> list[str]:
        names = ["logits", "uniforms"]
        if self.config.uses_penalty:
            names.append("previous_tokens")
        if self.config.uses_cfg:
            names.append("uncond_logits")
        return names

    def example_inputs(self, batch: int = 1, window: int = 16) -> dict[str, torch.Tensor]:
        """Inputs of the right shapes and dtypes, keyed and ordered like `input_names`."""
        g = torch.Generator().manual_seed(0)
        shape = (batch, self.vocab_size)
        out = {
            "logits": torch.randn(shape, generator=g),
            "uniforms": torch.rand(shape, generator=g).clamp(U_MIN, U_MAX),
        }
        if self.config.uses_penalty:
            out["previous_tokens"] = torch.randint(
                -1, self.vocab_size, (batch, window), generator=g, dtype=torch.int32
            )
        if self.config.uses_cfg:
            out["uncond_logits"] = torch.randn(shape, generator=g)
        return out

    def _seen(self, previous_tokens: torch.Tensor) -> torch.Tensor:
        # A one-hot compare instead of scatter: no index writes, costs B * W * V compares.
        vocab = torch.arange(self.vocab_size, dtype=torch.int32, device=previous_tokens.device)
        return (previous_tokens.to(torch.int32).unsqueeze(-1) == vocab).any(dim=1)

    def _penalise(self, x: torch.Tensor, previous_tokens: torch.Tensor) -> torch.Tensor:
        return self._penalise_seen(x, self._seen(previous_tokens))

    def _penalise_seen(self, x: torch.Tensor, seen: torch.Tensor) -> torch.Tensor:
        pen = self.config.repetition_penalty
        return torch.where(seen, torch.where(x < 0, x * pen, x / pen), x)

    @staticmethod
    def _race(scores: torch.Tensor, keep: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
        """exp(score - max kept score) / E over the kept scores (0 elsewhere): the host's
        `gumbel_argmax` on the -inf-masked scores, without an -inf in the graph."""
        top = torch.where(keep, scores, torch.full_like(scores, -3.0e38)).amax(-1, keepdim=True)
        return torch.where(keep, torch.exp(scores - top), torch.zeros_like(scores)) / e

    def forward(
        self,
        logits: torch.Tensor,
        uniforms: torch.Tensor,
        previous_tokens: torch.Tensor | None = None,
        uncond_logits: torch.Tensor | None = None,
    ) -> torch.Tensor:
        cfg = self.config
        if previous_tokens is not None and previous_tokens.is_floating_point():
            previous_tokens, uncond_logits = None, previous_tokens
        # float32 inside even in an fp16 graph: -log(u) and the top-p cumsum need the digits.
        x = logits.float()
        if cfg.uses_cfg:
            cond, uncond = x, uncond_logits.float()
            x = cond + cfg.cfg_weight * (cond - uncond)
        # The seen mask when the penalty runs after the filters (it acts on what they kept).
        seen_after = None
        if cfg.uses_penalty and cfg.order.penalty_after_filters:
            seen_after = self._seen(previous_tokens)
        elif cfg.uses_penalty:
            x = self._penalise(x, previous_tokens)
        s = x / cfg.temperature
        f = x if cfg.order.filter_on_raw_scores else s
        e = -torch.log(uniforms.float().clamp(U_MIN, U_MAX))
        if not self.sorts:
            return self._draw_full(s, e, seen_after)
        return self._draw_candidates(f, s, e, seen_after)

    def _draw_full(
        self, s: torch.Tensor, e: torch.Tensor, seen_after: torch.Tensor | None
    ) -> torch.Tensor:
        """Neither top-k nor top-p: the draw runs over the whole vocabulary (min-p is a compare)."""
        r = torch.exp(s - s.amax(dim=-1, keepdim=True))
        if seen_after is not None:
            keep = r >= self.config.min_p if self.config.uses_min_p else torch.ones_like(seen_after)
            return torch.argmax(self._race(self._penalise_seen(s, seen_after), keep, e), dim=-1).to(
                torch.int32
            )
        if self.config.uses_min_p:
            r = torch.where(r >= self.config.min_p, r, torch.zeros_like(r))
        return torch.argmax(r / e, dim=-1).to(torch.int32)

    def _draw_candidates(
        self, f: torch.Tensor, s: torch.Tensor, e: torch.Tensor, seen_after: torch.Tensor | None
    ) -> torch.Tensor:
        cfg, order = self.config, self.config.order
        f_c, idx = torch.topk(f, self.k, dim=-1)  # sorted, best first
        s_c = f_c / cfg.temperature if order.filter_on_raw_scores else f_c
        first = torch.arange(self.k, device=f.device) == 0
        keep = torch.ones_like(f_c, dtype=torch.bool)
        r_s = torch.exp(s_c - s_c[:, :1])  # relative probabilities on the tempered scores
        if cfg.uses_min_p and order.min_p_before_top_p:
            keep = keep & (r_s >= cfg.min_p)
        if cfg.uses_top_p:
            keep = keep & self._top_p_keep(f, f_c, s, s_c, keep, first)
        if cfg.uses_min_p and not order.min_p_before_top_p:
            keep = keep & (r_s >= cfg.min_p)
        e_c = torch.gather(e, 1, idx)
        if seen_after is not None:
            penalised = self._penalise_seen(s_c, torch.gather(seen_after, 1, idx))
            w = self._race(penalised, keep, e_c)
        else:
            w = torch.where(keep, r_s, torch.zeros_like(r_s)) / e_c
        pos = torch.argmax(w, dim=-1, keepdim=True)
        return torch.gather(idx, 1, pos)[:, 0].to(torch.int32)

    def _top_p_keep(
        self,
        f: torch.Tensor,
        f_c: torch.Tensor,
        s: torch.Tensor,
        s_c: torch.Tensor,
        keep: torch.Tensor,
        first: torch.Tensor,
    ) -> torch.Tensor:
        cfg, order = self.config, self.config.order
        r_c = torch.exp(f_c - f_c[:, :1])
        r_c = torch.where(keep, r_c, torch.zeros_like(r_c))
        # The normaliser over everything still in play - the whole vocabulary unless top-k
        # (candidates are exactly the top_k) or an earlier min-p removed some of it - or over
        # the whole vocabulary regardless (`top_p_over_whole_vocab`).
        if cfg.uses_top_k and not order.top_p_over_whole_vocab:
            total = r_c.sum(dim=-1, keepdim=True)
        else:
            r_full = torch.exp(f - f_c[:, :1])
            if cfg.uses_min_p and order.min_p_before_top_p and not order.top_p_over_whole_vocab:
                # min-p ran first and its survivors may lie past the candidates: sum them all.
                # (min-p looks at the tempered scores; f is s unless filter_on_raw_scores.)
                passed = torch.exp(s - s_c[:, :1]) >= cfg.min_p
                r_full = torch.where(passed, r_full, torch.zeros_like(r_full))
            total = r_full.sum(dim=-1, keepdim=True)
        p = r_c / total
        cum = torch.cumsum(p, dim=-1)
        cut = cum <= cfg.top_p if order.top_p_drops_crossing_token else (cum - p) < cfg.top_p
        return cut | first
