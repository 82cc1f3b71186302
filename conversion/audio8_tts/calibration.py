"""Random Audio8 weights whose draws take the paths a trained model's take, and their statistics.

Plain N(0, 0.02) weights give the tied head logits of std 0.02 * sqrt(dim) (0.23 reduced):
nearly uniform over 4,097 rows (entropy 8.29 of at most 8.32 nats, top-50 mass 0.02), so
top-p never cuts, RAS never fires and eos never comes, and a rung cannot tell a port that
ignores them. `calibrate` changes three things, each from the seed and the stated targets below
(computed from the config, never fitted to a gate's outputs):

* **Peaked heads.** Aim: an untempered entropy of about 3 nats (`TARGET_ENTROPY`; a trained
  LM's next-token entropy is a few nats, not log V) and about 0.9 of the mass in the top 50, so
  top-p 0.9 cuts inside top-k 50 and the same few semantics recur (RAS fires). The final norms'
  weights (`norm`, `fast_norm`) are scaled so the raw logits' std is `HEAD_LOGIT_STD` (slow) and
  `FAST_LOGIT_STD` (fast), both 3: gain = std / (0.02 * sqrt(dim)).
* **Audio frames look like audio.** Every codebook-embedding row gets a shared component
  `AUDIO_MEAN` (0.02) along a seeded unit direction d: an audio column (row 0 semantic: the
  ten code embeddings are summed in) carries 10 * 0.02 along d, a text column nothing.
* **An eos that comes.** The eos embedding row (the tied head's eos row) gets beta * d, so its
  logit rises on audio frames and stays low after text. beta puts the eos logit at
  log V + sigma^2 / 2 - log(EOS_MEAN_FRAMES) (log V + sigma^2/2: the log-partition of V Gaussian
  logits of std sigma), i.e. a raw eos probability of about 1 / EOS_MEAN_FRAMES a frame:
  an utterance of about 8 s (172 frames at 21.5 frames/s). The logit on a frame varies with
  the hidden, so some runs stop within the gate's 12 frames and some do not.

Audio8's sampler has no min-p and no repetition penalty (the publisher's processor is top-k,
top-p, temperature; RAS is its repetition control), so neither has a path to open here.

`statistics` measures what the gate needs on the reference's free run (entropy, top-50 mass,
share of draws top-p cut, RAS fired, eos frame, draws that change with top-p 1.0 or another
RAS temperature); `python -m conversion.audio8_tts.calibration_report` prints them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from .config import Audio8Config

INIT_STD = 0.02  # the publisher's initializer_range: random matrices' std
TARGET_ENTROPY = 3.0  # nats, untempered, the slow head (log 4,097 = 8.32 is uniform)
# Logit std for it: V iid Gaussian logits of std 3 have entropy 4.39 nats and top-50 mass 0.74,
# std 4: 2.95 nats, 0.91 (V = 4,096, 2,000 rows). The slow head's hidden carries its own head's
# rows (tied embeddings: the fed-back semantic), so it is peakier than iid at one gain: std 3
# gives it 2.0..4.2 nats (the gate's snapshot, weights seeds 0 and 7, draw seeds 0..2). The fast
# head is iid-like: at std 3 it measures 4.4..4.5 nats (top-p cuts 1..4 % of its draws); std 4
# would bring it to ~3 nats, not adopted yet (the gate's thresholds are measured at std 3).
HEAD_LOGIT_STD = 3.0  # target std of the raw slow logits
FAST_LOGIT_STD = 3.0  # target std of the raw fast logits
AUDIO_MEAN = 0.02  # shared component of every codebook-embedding row along d
EOS_MEAN_FRAMES = 172  # ~8 s at 44,100 / 2,048 frames/s: a raw eos probability of 1/172 a frame
CALIBRATION = "peaked-heads-eos/1"  # in a random snapshot's manifest: a stale cache is redrawn


def head_gain(dim: int, std: float = HEAD_LOGIT_STD) -> float:
    """Scale of a final norm's weight that gives logits of std `std`."""
    return std / (INIT_STD * math.sqrt(dim))


def eos_beta(config: Audio8Config) -> float:
    """The eos row's component along d (see the module docstring)."""
    c = config
    books = c.num_codebooks
    # an audio column's input: 1 + books random rows of std INIT_STD, plus books * AUDIO_MEAN on d
    along = books * AUDIO_MEAN
    cos = along / math.sqrt((books + 1) * INIT_STD**2 * c.dim + along**2)
    target = math.log(c.semantic_count + 1) + HEAD_LOGIT_STD**2 / 2 - math.log(EOS_MEAN_FRAMES)
    return target / (head_gain(c.dim) * math.sqrt(c.dim) * cos)


def audio_direction(config: Audio8Config, seed: int) -> torch.Tensor:
    """The seeded unit direction d [dim] (its own generator: the plain draws are unchanged)."""
    gen = torch.Generator().manual_seed(int(seed) + 0xA8CA1)
    d = torch.randn(config.dim, generator=gen, dtype=torch.float32)
    return d / d.norm()


def calibrate(state: dict[str, torch.Tensor], config: Audio8Config, seed: int) -> None:
    """Scale the final norms, add the audio direction and the eos component (in place, fp32)."""
    c = config
    state["norm.weight"] = state["norm.weight"] * head_gain(c.dim)
    state["fast_norm.weight"] = state["fast_norm.weight"] * head_gain(c.fast_dim, FAST_LOGIT_STD)
    d = audio_direction(c, seed)
    state["codebook_embeddings.weight"] = state["codebook_embeddings.weight"] + AUDIO_MEAN * d
    emb = state["embeddings.weight"].clone()
    emb[c.eos_token_id] += eos_beta(c) * d
    state["embeddings.weight"] = emb


# -- statistics ---------------------------------------------------------------------------------


@dataclass
class Statistics:
    frames: int  # frames drawn (the eos frame included)
    entropy: float  # mean untempered entropy of the slow logits, nats
    top50_mass: float  # mean share of the slow softmax in its 50 best
    top_p_cut_slow: float  # share of slow draws whose top-p 0.9 kept fewer than top-k 50
    top_p_cut_fast: float  # the same over the fast draws
    fast_entropy: float
    ras_fired: int  # frames that took the RAS draw
    eos_frame: int | None  # the frame that drew eos, None when the budget ran out
    changed_top_p_1: int  # draws (semantic + codes) that differ with top_p = 1.0
    changed_ras_temperature: int  # ... with ras_temperature 0.5 instead of 1.0
    draws: int

    def line(self) -> str:
        eos = "none" if self.eos_frame is None else f"frame {self.eos_frame}"
        return (
            f"entropy {self.entropy:.2f} nats (fast {self.fast_entropy:.2f}), top-50 mass "
            f"{self.top50_mass:.3f}, top-p cut {self.top_p_cut_slow:.0%} slow / "
            f"{self.top_p_cut_fast:.0%} fast, RAS fired {self.ras_fired}/{self.frames}, eos "
            f"{eos}; draws changed: top_p 1.0 {self.changed_top_p_1}/{self.draws}, RAS "
            f"temperature 0.5 {self.changed_ras_temperature}/{self.draws}"
        )


def _entropy(logits: np.ndarray) -> tuple[float, float]:
    p = torch.softmax(torch.as_tensor(logits, dtype=torch.float64), dim=-1)
    ent = float(-(p * p.clamp_min(1e-300).log()).sum())
    return ent, float(p.topk(50).values.sum())


def _kept(logits: np.ndarray, sp) -> int:
    from .reference import process

    scores = process(torch.as_tensor(np.asarray(logits, np.float32))[None], sp.top_k, sp.top_p, 1)
    return int(torch.isfinite(scores).sum())


def _draws(gen) -> list[int]:
    return [int(x) for f in gen.frames for x in (f.semantic, *f.codes[1:])]


def _changed(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    return sum(x != y for x, y in zip(a[:n], b[:n], strict=True)) + abs(len(a) - len(b))


def statistics(lm, prompt: np.ndarray, frames: int, seed: int) -> Statistics:
    """The reference's free run at draw `seed` and what its sampler did (see the module doc)."""
    from dataclasses import replace

    from . import reference as R

    c = lm.config
    sp = R.SamplingParams.from_config(c)
    gen = R.generate(lm, prompt, frames, R.seeded_uniforms(seed, c), sp)
    slow = [_entropy(f.logits) for f in gen.frames]
    fast = [_entropy(lg)[0] for f in gen.frames for lg in f.fast_logits]
    cut_slow = [_kept(f.logits, sp) < sp.top_k for f in gen.frames]
    cut_fast = [_kept(lg, sp) < sp.top_k for f in gen.frames for lg in f.fast_logits]
    base = _draws(gen)
    other = {
        "top_p": replace(sp, top_p=1.0),
        "ras": replace(sp, ras_temperature=0.5),
    }
    changed = {
        k: _changed(base, _draws(R.generate(lm, prompt, frames, R.seeded_uniforms(seed, c), v)))
        for k, v in other.items()
    }
    return Statistics(
        frames=len(gen.frames),
        entropy=float(np.mean([e for e, _ in slow])),
        top50_mass=float(np.mean([m for _, m in slow])),
        top_p_cut_slow=float(np.mean(cut_slow)),
        top_p_cut_fast=float(np.mean(cut_fast)),
        fast_entropy=float(np.mean(fast)),
        ras_fired=sum(f.used_high for f in gen.frames),
        eos_frame=len(gen.frames) - 1 if gen.finished else None,
        changed_top_p_1=changed["top_p"],
        changed_ras_temperature=changed["ras"],
        draws=len(base),
    )
