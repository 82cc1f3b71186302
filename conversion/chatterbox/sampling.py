"""Chatterbox's sampling order, for `conversion.core.host.sampling.SamplingConfig.order`.

Chatterbox's `T3.inference` loop (chatterbox-tts 0.1.x) runs CFG (Chatterbox's convention,
`cond + w * (cond - uncond)`: core's `cfg_combine`) -> repetition penalty -> temperature -> min-p
-> top-p -> draw, with no top-k. That is transformers' `generate` order except that min-p runs
BEFORE top-p rather than after it, so top-p sees the distribution renormalised over what min-p
kept. Everything else is `HF_ORDER`: top-p on the temperature-scaled scores, normalised over what
is still in play, a token kept while the mass before it is < top_p.
"""

from __future__ import annotations

from conversion.core.host.sampling import SamplingOrder

CHATTERBOX_ORDER = SamplingOrder(min_p_before_top_p=True)
