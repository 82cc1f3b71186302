"""Chatterbox's gate ladder: each graph against the publisher's code, then end to end.

The oracle is `chatterbox-tts`'s own ChatterboxTTS on the same weights, every intermediate and
draw recorded (the `oracle` package). Each rung feeds a graph the oracle's own inputs and
compares on the real region:

0. text: voxport's text path (the bundle's tokenizer.json through `TextTokenizer.chunks`: its
   split and its ids) vs the publisher's (voxport's split of the text, each piece through
   `punc_norm`, its tokenizer, SOT/EOT), piece by piece: the same pieces, text and ids, and the
   pieces re-join to the text, for the punctuation edge cases (`TEXT_CASES`, one piece each)
   and texts over the budget (`TEXT_LONG_CASES`); the bundle is fed voxport's own ids
   throughout;
1. T3, teacher-forced along the oracle's tokens: cond and uncond logits, the worst step's cosine
   (fp32 ≥ 0.9999, int8 ≥ 0.999); the draws the bundle's logits give with the oracle's uniforms
   (fp32: all; int8 ≥ 0.9, each miss listed);
2. flow encoder: mu (≥ 0.999); estimator: every Euler step's velocity (fp32 ≥ 0.9999; an fp16
   estimator on the smallest bucket ≥ 0.999, every step, or the middle one with
   `--fp16-steps mid`); the host Euler loop from the oracle's noise: mel;
3. HiFT from the oracle's mel and source draws: magnitude-spectrogram corr ≥ 0.999;
4. end to end with the oracle's tokens and noise forced: T3 logits (≥ 0.9999), mel cos ≥ 0.999,
   wav spec corr ≥ 0.99; once with the default voice and once cloned from a reference wav,
   where the oracle clones with the publisher's own `prepare_conditionals` and the bundle gets
   the voice file `voxport voice` writes (prompt cut to the config's cap), read back from disk
   by the host's reader; `voice[cloned].conds` compares that file's arrays with the
   publisher's conditionals computed in memory by its `prepare_conditionals`;
5. T3 free-running on the oracle's uniforms: the same token sequence.
The step-count table (8/6/4 and 10 Euler steps on the bundle, each vs the publisher's 10-step
mel) is measured and printed.

The package, by stage: `case` (a case and the shared comparisons), `text_rungs` (0),
`t3_rungs` (1 and 5), `flow_rungs` (2, the fp16 estimator and the step-count table),
`hift_rungs` (3), `voice_rungs` and `e2e_rungs` (4); `ladder` makes the cases and bundles
(`prepare`) and runs the rungs in this order (`main_rungs`, `run_gate`).
"""

from .flow_rungs import FP16_STEPS
from .ladder import main_rungs, prepare, run_gate

__all__ = ["FP16_STEPS", "main_rungs", "prepare", "run_gate"]
