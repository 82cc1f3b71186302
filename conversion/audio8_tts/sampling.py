"""Audio8's sampling parameters and order, shared by the reference and the `ar` graph.

Audio8 filters with its `ArkttsLegacyTopKTopPLogitsProcessor` and only then divides by the
temperature (`reference.process`): top-k and top-p together on the raw (untempered) scores,
top-p's probabilities normalised over the whole vocabulary (not over the top-k), a token removed
when its inclusive cumulative sum exceeds top_p (the best always kept); then temperature; then
min-p if set. Its draw, `ArkttsModel._sample`, is the exponential race `argmax(p / -log u)` that
core's `gumbel_argmax` and `GumbelSampler` implement.

`SamplingParams` is the publisher's generation_config (top-k 50, top-p 0.9, temperature 0.7)
plus the config's RAS fields; the reference and the graph each read it, neither computes with
the other's code.
"""

from __future__ import annotations

from dataclasses import dataclass

from conversion.core.host.sampling import SamplingOrder

from .config import Audio8Config

TOP_K = 50
TOP_P = 0.9
TEMPERATURE = 0.7
MIN_TEMPERATURE = 1e-5  # the publisher clamps the temperature from below

AUDIO8_ORDER = SamplingOrder(
    filter_on_raw_scores=True,
    top_p_over_whole_vocab=True,
    top_p_drops_crossing_token=True,
)


@dataclass(frozen=True)
class SamplingParams:
    top_k: int = TOP_K
    top_p: float = TOP_P
    temperature: float = TEMPERATURE
    ras_top_p: float = 0.9
    ras_temperature: float = 1.0
    ras_window: int = 10

    @classmethod
    def from_config(cls, config: Audio8Config, **kw) -> SamplingParams:
        return cls(
            ras_top_p=config.ras_top_p,
            ras_temperature=config.ras_temperature,
            ras_window=config.ras_window_size,
            **kw,
        )
