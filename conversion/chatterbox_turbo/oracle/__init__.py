"""The publisher's Chatterbox Turbo as the oracle: one utterance, every intermediate and draw
recorded.

`record` runs the steps of `ChatterboxTurboTTS.generate` (chatterbox-tts 0.1.7, tts_turbo.py)
with the publisher's own functions: `punc_norm`, the GPT-2 tokenizer as generate() calls it,
`T3.inference_turbo`, `speech_tokens < 6561` and three `S3GEN_SIL` appended, `S3Gen.inference`
with 2 mean-flow steps, the watermarker. What it records:

- T3: the prefill embeddings [1, 1 + prompt + text + 1, d] (speaker row, voice prompt, text,
  start-of-speech; no CFG row, no positions added: GPT-2 adds its own), per draw the speech
  head's raw logits, the processed distribution the draw is taken from (`t3_probs`), the
  uniforms and the token. inference_turbo's processors, in its order: temperature, top-k
  (1000), top-p (0.95), repetition penalty (1.2) - the penalty LAST, on what top-p left, unlike
  transformers' generate. Their ids: start-of-speech at the first draw, then the tokens drawn
  so far (`t3.previous_tokens`). `t3_tokens` holds every draw, a final stop included (the first
  draw is never checked for stop: the loop checks only inside its body).
- The draw: `torch.multinomial(probs, 1)` is patched with an exponential race,
  `argmax(probs / -log u)`, `u = torch.rand(V)` from a `torch.Generator` seeded with `seed`,
  clipped as `conversion.core.host.sampling` clips it: exactly a draw from the publisher's
  distribution, with its randomness recorded (`draws["t3_uniforms/0"]`, [N, V]).
- S3Gen: the flow's token ids (prompt + speech + silence), the encoder output, the mean-flow
  noise `flow_inference` draws over the generated frames (`randn/0`) and the CFM's own
  `randn_like/0` (prompt + generated; its generated part replaced by that noise), per mean-flow
  step the estimator's x, t, r (the step's end time) and velocity (`cfm_x`, `cfm_t`, `cfm_r`,
  `cfm_velocity`; no CFG: batch 1), the shared mu/mask/spks/cond, the CFM output, the mel, f0,
  the harmonic source, HiFT's conv_post, the vocoder's wav, S3Gen's wav after trim_fade (the
  wav before the watermark) and the final wav. Draws after the two noises: `rand/0` SineGen's
  phases, `randn_like/1..` its noise.

`record` leaves the model as it found it: it runs on a copy of the conditionals.
"""

from .t3 import SPEECH_TOKENS, START_SPEECH, STOP_SPEECH, previous_tokens
from .utterance import ORDER, PACKAGES, record

__all__ = [
    "ORDER",
    "PACKAGES",
    "SPEECH_TOKENS",
    "START_SPEECH",
    "STOP_SPEECH",
    "previous_tokens",
    "record",
]
