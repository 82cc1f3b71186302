"""Chatterbox Turbo's sampling order, for `conversion.core.host.sampling.SamplingConfig.order`.

`T3.inference_turbo` (chatterbox-tts 0.1.7) builds transformers' processors in this order:
Temperature -> TopK(1000) -> TopP(0.95) -> RepetitionPenalty(1.2), then softmax and
`torch.multinomial`. That is transformers' `generate` order except that the repetition penalty
runs LAST, on the tempered scores top-k and top-p kept (-inf stays -inf): the filters choose
among unpenalised scores. Everything else is `HF_ORDER`: top-k / top-p on the tempered scores,
top-p normalised over what top-k kept, a token kept while the mass before it is < top_p
(TopP's `ascending cumsum <= 1 - top_p` removes exactly the others).
"""

from __future__ import annotations

from conversion.core.host.sampling import SamplingConfig, SamplingOrder

TURBO_ORDER = SamplingOrder(penalty_after_filters=True)


def turbo_sampling(
    temperature: float = 0.8,
    top_k: int = 1000,
    top_p: float = 0.95,
    repetition_penalty: float = 1.2,
) -> SamplingConfig:
    """`inference_turbo`'s processors as a SamplingConfig (its defaults are these defaults).

    The publisher adds Temperature only when temperature != 1, TopK when top_k > 0, TopP when
    top_p < 1 and the penalty when != 1: SamplingConfig's "off" values mean the same.
    """
    return SamplingConfig(
        temperature=temperature,
        top_k=top_k,
        top_p=top_p,
        repetition_penalty=repetition_penalty,
        order=TURBO_ORDER,
    )
