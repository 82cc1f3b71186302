"""Audio8's gate ladder: the fused frame graph, the codec and the encoder against the plain-torch
reference, and exported fp16 / int8 `ar` graphs against the fp32 reference.

The reference (`reference/`) is our fp32 re-author of the publisher's ArkttsModel, sampler
and generate loop (no publisher weights or code run here: the snapshot carries neither; a rung
comparing reference and publisher belongs to a snapshot that does). The ladder (`ladder.py`:
the gate utterance, the reference runs, `ladder_rungs`, `run_gate`) puts the rungs in this
order; each stage's rungs are built in its own module, named in brackets:

0. the bundle's prompt builder vs the template as the publisher states it
   (`publisher_prompt.py`, written apart from `prompt.py`), plain and with a reference: every
   column equal; the reference run below is fed the publisher-stated prompt [prompt_rungs];
1. the graph's sampler vs the NumPy sampler on random logits, same uniforms: 20/20, 1000/1000;
   the frame graph's slow draw (RAS, the eos id) vs the reference's on rows where eos is the
   best candidate, RAS is taken, or neither: every row [sampler_rungs];
2. frames teacher-forced on the reference's columns with its uniforms: draw agreement ≥ 99 %,
   each miss listed with its Gumbel margin [ar_rungs];
3. free run with the same uniforms: identical code sequences (fp32) [ar_rungs];
4. one codec window (codes drawn as the fast head can: some past their book, clamped) through
   the runtime vs the codec reference written from the architecture
   (`codec/reference.py`: plain torch over codec.pth's state dict, no module shared with the
   graph): cos ≥ 0.9999; streamed decode vs the reference's one-shot, every window (window 0
   exact, later windows each their own cosine threshold) [codec_rungs];
5. the encoder graph (voice registration) vs that reference's encoder: codes, and the audio
   the bundle decodes from them [codec_rungs];
6. exported fp16, int8 and mixed (slow int8 + fast fp16) `ar` bundles (side bundles holding
   only `ar`, exported once and reused: `precision_bundles`) teacher-forced on the fp32
   reference: per AR draw agreement and logits cos min (`precision_rungs.PRECISION_MIN`)
   [precision_rungs].
"""

from .ladder import (
    GATE_FRAMES,
    GATE_TEXT,
    VOICE_FRAMES,
    gate_prompt,
    ladder_rungs,
    precision_bundles,
    precision_rows,
    reference_prompt,
    reference_voice_run,
    run_gate,
    voice_case,
)

__all__ = [
    "GATE_FRAMES",
    "GATE_TEXT",
    "VOICE_FRAMES",
    "gate_prompt",
    "ladder_rungs",
    "precision_bundles",
    "precision_rows",
    "reference_prompt",
    "reference_voice_run",
    "run_gate",
    "voice_case",
]
