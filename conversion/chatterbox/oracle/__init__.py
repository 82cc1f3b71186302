"""The publisher's Chatterbox as the oracle: one utterance, every intermediate and draw recorded.

`record` runs the steps of `ChatterboxTTS.generate` (chatterbox-tts 0.1.7) with the publisher's
own functions: the exaggeration update, `punc_norm`, the text tokenizer, SOT/EOT padding and the
CFG batch of two, `T3.inference`, `drop_invalid_tokens` (and `< 6561`), `S3Gen.inference`, the
watermarker. Hooks and two temporary patches record what the gates compare:

- T3: `cond_emb` (`cond_enc`'s output [1, 34, 1024]), the prefill embeddings [2, 34+Tt+2, 1024]
  (conditioning, text, and start-of-speech TWICE: `prepare_input_embeds` appends the initial
  speech token 6561 at position 0 and the loop appends a `bos_embed`, also 6561 at position 0),
  per step the cond and uncond logits (rows 0 and 1 of `speech_head`'s last position; the loop
  computes one more forward after the last draw, which is dropped), the uniforms and the tokens.
- The draw. The loop samples with `torch.multinomial(probs, 1)`; while it runs, that name is
  patched with an exponential race, `argmax(probs / -log u)`, `u = torch.rand(V)` from a
  `torch.Generator` seeded with `seed`, clipped to [U_MIN, U_MAX] as `conversion.core.host.sampling`
  clips it. The winner of an exponential race with rates `probs` is token i with probability
  probs[i], so this is exactly a sample from the publisher's distribution, with its randomness
  recorded: `conversion.core.host.sampling.sample(cond_logits, u, SamplingConfig(order=
  CHATTERBOX_ORDER, ...), previous_tokens=[6561, tokens so far], uncond_logits)` (the order from
  `conversion.chatterbox.sampling`) draws the same token (up to float ties). With `forced_tokens`
  the patched draw returns the given tokens instead (teacher forcing: the logits along that path)
  and the loop runs for exactly that many steps.
- S3Gen: the flow's token ids (prompt + speech), the encoder output (before `encoder_proj`), what
  the CFM receives (`mu`, mask, projected speaker embedding, prompt-mel `cond`), the noise `z`,
  per Euler step the estimator's inputs and output for both CFG rows (`solve_euler` calls
  `estimator.forward` directly, so it is wrapped for the block), the CFM output, the generated
  mel, `f0`, the upsampled f0, SineGen's waves, the harmonic source `m_source.0` and its uv,
  HiFT's `conv_post` (log-magnitude and phase before the iSTFT), the vocoder's wav before
  `trim_fade`, S3Gen's wav after it (the publisher zeroes the first 20 ms and raised-cosine
  fades in the next 20 ms) and the final, watermarked wav.
- Draws (`capture_random_draws` keys, in call order during `S3Gen.inference`): `randn_like/0`
  the CFM noise z, `rand/0` SineGen's initial phases (`Uniform(-pi, pi)`, harmonic 0 then zeroed),
  `randn_like/1` SineGen's noise, `randn_like/2` the source module's noise branch (unused by
  `inference`). `t3_uniforms/0` [N, V] holds T3's uniforms (not a torch function name, so
  `replay_random_draws` skips it; absent when teacher-forced).

`record` leaves the model as it found it: `model.conds` is swapped for a copy while it runs (the
publisher mutates conditionals: `generate` replaces the T3Cond on an exaggeration change,
`prepare_conditioning` caches the prompt embedding on it, and `S3Token2Mel.forward` casts
`ref_dict["prompt_token"]` to float in place).

The package, by stage: `recording` (hooks and patches, the speech-token ids), `t3` (the text
path, the exaggeration update, T3's loop with its draw recorded), `s3gen` (the flow encoder,
CFM and HiFT hooked, draws captured), `utterance` (`record` and `record_flow_and_vocoder`: the
stages run in generate()'s order into one `oracles.Fixture`).
"""

from .recording import PACKAGES, SPEECH_VOCAB, START_SPEECH, STOP_SPEECH
from .utterance import record, record_flow_and_vocoder

__all__ = [
    "PACKAGES",
    "SPEECH_VOCAB",
    "START_SPEECH",
    "STOP_SPEECH",
    "record",
    "record_flow_and_vocoder",
]
