"""Audio8-TTS DualAR language model: a plain-torch fp32 re-author of the publisher's ArkttsModel.

Written from the publisher's `modeling_arktts.py` (`Audio8-AI/Audio8_TTS`,
`model/audio8_tts_0_6B_preview/`), read for facts; none of its code is copied here. Module and
parameter names are the publisher's, so `Audio8LM.load_state_dict` takes a checkpoint's keys
unchanged (the RoPE tables are non-persistent buffers, as theirs are).

This is the eager reference the exported `ar` graph is gated against. It follows the
publisher's control flow, not the graph's: the graph (`ar/graphs.py`, `ar/layers.py`) is a
separate re-author in export-ready form, and the two share the checkpoint's weights and nothing
else (no module, no function), so a bug in either one shows as a difference between them.

Facts this package reproduces (publisher names in brackets):

* Input rows [B, 11, T]: row 0 token ids, rows 1..10 codebook indices. The embedding is
  `embeddings(row0) + where(row0 is semantic, sum_i codebook_embeddings(row_{i+1} + i*4096), 0)`
  [ArkttsModel._embed]: the ten code embeddings, looked up book by book, are summed only where
  row 0 is a semantic id.
* Blocks [ArkttsTransformerBlock]: pre-norm RMSNorm (float32, eps 1e-6), fused `wqkv` (bias on
  for the slow AR, off for the fast AR), `wo` without bias, GQA by repeating each KV head for its
  query heads (query head h reads KV head h // (heads / kv_heads)), scale 1/sqrt(head_dim),
  SwiGLU `w2(silu(w1 x) * w3 x)`. The slow AR's attention is SDPA with a boolean mask, the fast
  AR's a written-out masked softmax, as the publisher's.
* RoPE [_precompute_rope, _apply_rope]: GPT-J pairs (dims 2i, 2i+1 rotate together), angles
  pos * base^(-2i/d) in float32, cos/sin ROUNDED TO BFLOAT16 (also in an fp32 model), applied in
  float32. Slow table over max_seq_len positions, fast table over the 10 codebook positions.
* KV caches [ArkttsKVCache, _setup_generation_caches]: static per-layer storage allocated once
  per generate call; the slow AR's (prompt + frames rows) hands attention the rows written so
  far, the fast AR's (10 slots, one per codebook position) hands all ten slots and a causal mask
  over them hides the ones not yet written for this frame.
* Head: tied, `linear(norm(h), embeddings.weight)` over the WHOLE vocabulary [_slow_step]; the
  records keep the 4,097 drawable rows (semantic ids then eos, `compact_logits`).
* The fast AR [_generate_codebooks, _fast_step]: position 0 is the slow AR's last hidden — its
  post-norm hidden when `config.norm_fastlayer_input` (the published setting), the pre-norm one
  otherwise — through `fast_project_in` (Identity at fast_dim == dim); its logits are computed
  and thrown away. Positions 1..9 are `fast_embeddings(code_{j-1})`, ONE 4,096-row table shared
  by every codebook, code_0 = clamp(semantic - semantic_begin_id, 0, 4095); each gives codebook j
  through `fast_output` (4,096 rows), drawn before the next position runs.
* The sampler [_processed_scores, ArkttsLegacyTopKTopPLogitsProcessor, _sample], in this order:
  (1) semantic mask over the full vocabulary (slow AR only: everything but the semantic ids and
  eos set to -inf), (2) sort the whole row descending; softmax of the UNTEMPERED scores; drop a
  token when its inclusive cumulative sum > top_p OR its rank >= top_k; the best is always kept,
  (3) divide by temperature (clamped to >= 1e-5), (4) p = softmax, token = argmax(p / -log u),
  u ~ U[0,1) one per vocabulary entry (torch.rand of the full shape). generation_config: top_k 50,
  top_p 0.9, temperature 0.7; the fast AR uses the same three, without the semantic mask.
* RAS [_sample_semantic, generate]: every step draws `normal` (top_p, temperature) and then
  `high` (top_p = ras_top_p 0.9, temperature = ras_temperature 1.0, same top_k) with a second u.
  Step 0 returns `normal`. Later steps return `high` when `normal` is in the 10-token window
  `previous` AND is a semantic id (not eos), else `normal`. The window's quirk: after step 0,
  `previous` is created as ZEROS (step 0's token is not put in it); from step 1 on it rolls left
  and takes the step's token. So frame 0's semantic never enters the window; step 1 sees an
  empty window; step k >= 2 sees frames 1..k-1 (the last 10).
* generate: one slow pass over the whole prompt, then per step: the semantic draw on that
  step's logits, the fast AR's nine draws, the window update, and (unless eos) the step's
  column [semantic, code_0..9] through the slow AR for the next step's logits. A frame whose
  semantic is eos ends generation and is not emitted. (The publisher also runs the slow AR on
  the last frame's column, whose logits nothing reads; that pass is skipped here.)
* Codebooks 1..9 are drawn from 4,096 rows but the codec's residual books have 1,024 entries:
  the publisher's codec clamps them at decode; that clamp belongs to the codec, not here.

Uniforms: every draw takes its u as an input. The slow draws use `u_slow` [2, 4097] (row 0 the
normal draw, row 1 the RAS draw; column j is semantic id begin+j, column 4096 eos), expanded to
the full vocabulary for the draw (`expand_uniforms`): u of the vocabulary entries the mask
removes cannot change a draw, so the compact u replays the publisher's full-vocabulary draw.
The fast draws use `u_fast` [9, 4096].

Modules: `layers.py` (the blocks, RoPE, the static KV caches), `model.py` (`Audio8LM`),
`sampler.py` (the filter, the race, RAS), `generation.py` (`generate` and its records). Every
public name is re-exported here; a test that patches a function patches it in the module that
calls it.
"""

from ..sampling import MIN_TEMPERATURE, TEMPERATURE, TOP_K, TOP_P, SamplingParams
from .generation import FrameRecord, Generation, UniformsFn, generate, seeded_uniforms
from .layers import (
    Attention,
    Block,
    FeedForward,
    RMSNorm,
    StaticKV,
    apply_rope,
    compact_logits,
    drawable_ids,
    expand_kv,
    is_semantic,
    rope_table,
)
from .model import Audio8LM
from .sampler import (
    SemanticDraw,
    compact_to_vocab,
    draw_semantic,
    draw_semantic_full,
    expand_uniforms,
    gumbel_draw,
    next_window,
    process,
    semantic_mask,
    top_k_top_p_mask,
)

__all__ = [
    "Attention",
    "Audio8LM",
    "Block",
    "FeedForward",
    "FrameRecord",
    "Generation",
    "MIN_TEMPERATURE",
    "RMSNorm",
    "SamplingParams",
    "SemanticDraw",
    "StaticKV",
    "TEMPERATURE",
    "TOP_K",
    "TOP_P",
    "UniformsFn",
    "apply_rope",
    "compact_logits",
    "compact_to_vocab",
    "draw_semantic",
    "draw_semantic_full",
    "drawable_ids",
    "expand_kv",
    "expand_uniforms",
    "generate",
    "gumbel_draw",
    "is_semantic",
    "next_window",
    "process",
    "rope_table",
    "seeded_uniforms",
    "semantic_mask",
    "top_k_top_p_mask",
]
