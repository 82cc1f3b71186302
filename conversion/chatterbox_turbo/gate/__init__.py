"""Chatterbox Turbo's gate ladder: each graph and host step against the publisher's code, then
end to end.

The oracle is `chatterbox-tts`'s own ChatterboxTurboTTS on the same weights, every intermediate
and draw recorded (the `oracle` package). Each rung feeds the bundle (or a host step) the
oracle's own inputs and compares on the real region:

0. text: voxport's text path (the bundle's tokenizer.json through `TurboTextTokenizer.chunks`)
   vs the publisher's (voxport's split, each piece through Turbo's `punc_norm` and the model's
   own tokenizer), piece by piece, for punctuation cases and texts over the budget;
1. T3 teacher-forced along the oracle's tokens: the worst step's logits cosine (fp32 ≥
   0.999999, int8 side bundle ≥ 0.999) and the draws its logits give with the oracle's
   uniforms (fp32: all; int8 ≥ 0.9); `t3.sampler_probs`: voxport's processed distribution
   (Temperature → TopK → TopP → RepetitionPenalty, the start token penalised at draw 0) on the
   oracle's logits vs the publisher's, max abs ≤ 1e-5;
2. `s3gen.speech_tokens`: voxport's T3-to-S3Gen step on the oracle's tokens vs the tokens the
   publisher handed S3Gen (below 6561, three silence tokens appended): equal;
3. flow encoder: mu (≥ 0.999); the mean-flow estimator at both steps with the oracle's x, t
   and r (one row, ≥ 0.9999); the host's mean-flow loop from the oracle's noise: mel (≥ 0.999);
4. HiFT from the oracle's mel and source draws: magnitude-spectrogram corr ≥ 0.999 and every
   sample within 1e-2;
5. end to end with the oracle's tokens forced and its noise and draws replayed: T3 logits,
   mel cos ≥ 0.999, wav spec corr ≥ 0.99; with the default voice and with a voice cloned from
   a synthetic 6 s reference, where the oracle clones with the publisher's own
   `prepare_conditionals` and the bundle gets the voice file voxport writes, read back from
   disk; `voice[cloned].conds` compares that file's arrays (and T3's conditioning rows the
   host builds from them) with the publisher's conditionals;
6. T3 free-running on the oracle's uniforms: the same tokens and the same stop.

The S3Gen rungs (encoder, estimator, HiFT) and the row cosines are `conversion.s3gen.
gate_rungs`, shared with Chatterbox's gate. The package, by stage: `case`, `text_rungs` (0),
`t3_rungs` (1 and 6), `flow_rungs` (2 and 3), `voice_rungs` and `e2e_rungs` (5); `ladder` makes
the cases and bundles (`prepare`) and runs the rungs in this order (`main_rungs`, `run_gate`).
"""

from .ladder import main_rungs, prepare, run_gate

__all__ = ["main_rungs", "prepare", "run_gate"]
