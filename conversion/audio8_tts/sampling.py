"""Audio8's sampling order, for `conversion.core.sampling.SamplingConfig.order`.

Audio8 filters with its `ArkttsLegacyTopKTopPLogitsProcessor` and only then divides by the
temperature (`reference.process`): top-k and top-p together on the raw (untempered) scores,
top-p's probabilities normalised over the whole vocabulary (not over the top-k), a token removed
when its inclusive cumulative sum exceeds top_p (the best always kept); then temperature; then
min-p if set. Its draw, `ArkttsModel._sample`, is the exponential race `argmax(p / -log u)` that
core's `gumbel_argmax` and `GumbelSampler` implement.
"""

from __future__ import annotations

from conversion.core.sampling import SamplingOrder

AUDIO8_ORDER = SamplingOrder(
    filter_on_raw_scores=True,
    top_p_over_whole_vocab=True,
    top_p_drops_crossing_token=True,
)
