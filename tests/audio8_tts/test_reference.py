"""The plain-torch Audio8 LM re-author (conversion/audio8_tts/reference/), reduced config.

Seeded random weights; no publisher code runs here (it is not installed). What is checked:
the sampler against the toolkit's host sampler (`AUDIO8_ORDER`) draw for draw, the bf16 RoPE
tables, the compact 4,097-row draw against the publisher's full-vocabulary masked draw (and
`generate`'s recorded draws replayed on the compact rows), that `generate` filters over the
whole vocabulary as the publisher does, the cached slow AR against one full pass, deterministic
generate under given uniforms, the eos stop, the RAS rule and its first-frame window quirk, and
the state-dict names against the weights helper.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from conversion.audio8_tts import reference as R
from conversion.audio8_tts.config import PUBLISHED, REDUCED
from conversion.audio8_tts.reference import sampler as R_sampler
from conversion.audio8_tts.sampling import AUDIO8_ORDER
from conversion.audio8_tts.weights import random_model
from conversion.core.host.sampling import SamplingConfig, sample

torch.set_num_threads(1)

C = REDUCED
N_DRAWS = 1000


@pytest.fixture(scope="module")
def model():
    # the plain draws: these crafted prompts end on audio columns, where the calibrated eos
    # comes at once; the calibrated weights are gated end to end (test_cli, test_mutants)
    return random_model(C, seed=0, calibrated=False)


def _prompt(seed: int = 1, width: int = 20) -> np.ndarray:
    rng = np.random.default_rng(seed)
    prompt = np.zeros((C.num_codebooks + 1, width), np.int64)
    prompt[0] = rng.integers(0, 256, width)
    prompt[0, 5:12] = C.semantic_begin_id + rng.integers(0, C.codebook_size, 7)
    prompt[1:, 5:12] = rng.integers(0, 1024, (C.num_codebooks, 7))
    return prompt


def _logits_and_u(n: int, width: int, scale: float, seed: int):
    rng = np.random.default_rng(seed)
    logits = (rng.standard_normal((n, width)) * scale).astype(np.float32)
    u = np.maximum(rng.random((n, width), dtype=np.float32), np.finfo(np.float32).tiny)
    return logits, u


# -- sampler -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "width,top_p,temperature,scale",
    [
        (4097, 0.9, 0.7, 3.0),  # slow normal draw
        (4097, 0.9, 1.0, 3.0),  # slow RAS draw
        (4096, 0.9, 0.7, 1.0),  # fast draw, flat logits: the top-k 50 bound bites
        (4096, 0.5, 0.7, 5.0),  # peaked: top-p bites
    ],
)
def test_sampler_matches_toolkit_audio8(width, top_p, temperature, scale):
    logits, u = _logits_and_u(N_DRAWS, width, scale, seed=width + int(10 * top_p))
    ours = R.gumbel_draw(
        R.process(torch.from_numpy(logits), 50, top_p, temperature), torch.from_numpy(u)
    ).numpy()
    cfg = SamplingConfig(temperature=temperature, top_k=50, top_p=top_p, order=AUDIO8_ORDER)
    theirs = np.array([sample(logits[i], u[i], cfg) for i in range(N_DRAWS)])
    assert int((ours == theirs).sum()) == N_DRAWS


def test_top_p_cut_rule():
    """Inclusive cumsum > top_p removes (the crossing token too); the best is always kept."""
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.2], [0.95, 0.03, 0.02]]))
    kept = torch.isfinite(R.top_k_top_p_mask(logits, 50, 0.7))
    assert kept.tolist() == [[True, False, False], [True, False, False]]
    kept = torch.isfinite(R.top_k_top_p_mask(logits, 50, 0.85))
    assert kept.tolist() == [[True, True, False], [True, False, False]]
    kept = torch.isfinite(R.top_k_top_p_mask(logits, 1, 1.0))
    assert kept.sum().item() == 2


def test_compact_draw_equals_full_vocabulary_draw():
    """The 4,097-row draw with compact u == the publisher's masked full-vocabulary draw."""
    n = 200
    rng = np.random.default_rng(3)
    full = torch.from_numpy((rng.standard_normal((n, C.vocab_size)) * 3).astype(np.float32))
    rows = torch.cat(
        (torch.arange(C.semantic_begin_id, C.semantic_end_id + 1), torch.tensor([C.eos_token_id]))
    )
    compact = full[:, rows]
    u = torch.from_numpy(rng.random((n, 2, C.semantic_count + 1), dtype=np.float32)) + 1e-7
    window = torch.from_numpy(C.semantic_begin_id + rng.integers(0, 60, (n, 10)))
    a = R.draw_semantic(compact, u, window, C)
    b = R.draw_semantic_full(full, R.expand_uniforms(u, C), window, C)
    for f in ("semantic", "normal", "high", "used_high"):
        assert torch.equal(getattr(a, f), getattr(b, f)), f


# -- RoPE ----------------------------------------------------------------------------------------


def test_rope_tables_are_bf16_rounded(model):
    for table, length, d in (
        (model.freqs_cis, C.max_seq_len, C.head_dim),
        (model.fast_freqs_cis, C.num_codebooks, C.fast_head_dim),
    ):
        assert table.shape == (length, d // 2, 2) and table.dtype == torch.float32
        assert torch.equal(table, table.to(torch.bfloat16).float())
        inv = 1.0 / (C.rope_base ** (torch.arange(0, d, 2).float() / d))
        angles = torch.outer(torch.arange(length).float(), inv)
        exact = torch.view_as_real(torch.polar(torch.ones_like(angles), angles))
        assert torch.equal(table, exact.to(torch.bfloat16).float())
        assert (table - exact).abs().max() > 1e-4  # really rounded, not exact angles
    published = R.rope_table(PUBLISHED.max_seq_len, PUBLISHED.head_dim, PUBLISHED.rope_base)
    assert torch.equal(published, published.to(torch.bfloat16).float())


def test_rope_rotates_interleaved_pairs():
    x = torch.randn(1, 5, 3, 8)
    table = R.rope_table(5, 8, 1e6)
    z = torch.view_as_complex(x.reshape(1, 5, 3, 4, 2).contiguous())
    rot = torch.view_as_complex(table.contiguous())[None, :, None]
    want = torch.view_as_real(z * rot).reshape(1, 5, 3, 8)
    assert torch.allclose(R.apply_rope(x, table), want, atol=1e-6)


# -- model ---------------------------------------------------------------------------------------


def test_embedding_sums_codes_at_semantic_positions_only(model):
    prompt = torch.from_numpy(_prompt())[None]
    got = model.embed(prompt)[0]
    for t in (0, 6, 15):
        want = model.embeddings.weight[prompt[0, 0, t]].clone()
        if C.semantic_begin_id <= prompt[0, 0, t] <= C.semantic_end_id:
            for i in range(C.num_codebooks):
                want += model.codebook_embeddings.weight[prompt[0, i + 1, t] + i * C.codebook_size]
        assert torch.allclose(got[t], want, atol=1e-6)
    noisy = prompt.clone()
    noisy[0, 1:, :5] = 7  # codes under text ids are ignored
    assert torch.equal(model.embed(noisy)[0, :5], got[:5])


def test_cached_slow_steps_equal_one_pass(model):
    prompt = torch.from_numpy(_prompt())[None]
    hidden_full, _ = model.slow(prompt)
    hidden, cache = model.slow(prompt[:, :, :12])
    for t in range(12, prompt.shape[-1]):
        hidden, cache = model.slow(prompt[:, :, t : t + 1], cache)
    assert torch.allclose(hidden, hidden_full, atol=1e-5)
    assert torch.allclose(
        model.semantic_logits(hidden),
        model.full_logits(hidden)[
            :, list(range(C.semantic_begin_id, C.semantic_end_id + 1)) + [C.eos_token_id]
        ],
    )


# -- generate ------------------------------------------------------------------------------------


def test_generate_is_deterministic_given_uniforms(model):
    prompt = _prompt()
    a = R.generate(model, prompt, 12, R.seeded_uniforms(5, C))
    b = R.generate(model, prompt, 12, R.seeded_uniforms(5, C))
    assert a.codes.shape == (C.num_codebooks, 12)
    assert np.array_equal(a.codes, b.codes)
    recorded = [(f.u_slow, f.u_fast) for f in a.frames]
    c = R.generate(model, prompt, 12, recorded)
    assert np.array_equal(a.codes, c.codes)
    d = R.generate(model, prompt, 12, R.seeded_uniforms(6, C))
    assert not np.array_equal(a.codes, d.codes)
    # generate draws over the full vocabulary; its records replay on the compact rows
    for k, f in enumerate(a.frames):
        window = None if k == 0 else torch.from_numpy(f.window)[None]
        logits, u = torch.from_numpy(f.logits)[None], torch.from_numpy(f.u_slow)[None]
        compact = R.draw_semantic(logits, u, window, C)
        assert (int(compact.semantic), int(compact.normal), int(compact.high)) == (
            f.semantic,
            f.normal,
            f.high,
        ), k
    # code_0 is the semantic's code; the rows are [10, frames]
    sem = np.array([f.semantic for f in a.frames])
    assert np.array_equal(a.codes[0], sem - C.semantic_begin_id)
    assert np.allclose(a.prefill_logits, a.frames[0].logits)


def test_generate_filters_over_the_whole_vocabulary(model, monkeypatch):
    """The publisher's path: per frame the legacy filter (its sort) runs twice over the full
    vocabulary (the normal and the RAS draw, also at frame 0), then nine times over the
    fast head's 4,096 rows."""
    widths = []
    original = R.top_k_top_p_mask

    def spy(scores, top_k, top_p):
        widths.append(scores.shape[-1])
        return original(scores, top_k, top_p)

    monkeypatch.setattr(R_sampler, "top_k_top_p_mask", spy)
    frames = 3
    g = R.generate(model, _prompt(), frames, R.seeded_uniforms(5, C))
    assert len(g.frames) == frames
    per_frame = [C.vocab_size] * 2 + [C.codebook_size] * (C.num_codebooks - 1)
    assert widths == per_frame * frames


def test_eos_stops_generation_and_is_not_emitted(model):
    """eos drawn at frame 3 ends generate: its record is kept, its column is not emitted. The
    eos row of the tied head is made a copy of frame 3's normal draw's row (same logit, so it is
    kept by the filter) and its u wins the race at frame 3 and loses before."""
    prompt = _prompt()
    base = R.generate(model, prompt, 6, R.seeded_uniforms(5, C))
    target = base.frames[3].normal
    eos_col = C.semantic_count
    lm = copy.deepcopy(model)
    with torch.no_grad():
        lm.embeddings.weight[C.eos_token_id] = lm.embeddings.weight[target]
    uniforms = [(f.u_slow.copy(), f.u_fast) for f in base.frames]
    for k, (u_s, _) in enumerate(uniforms):
        u_s[:, eos_col] = np.float32(1 - 1e-7) if k == 3 else np.float32(1e-30)
    g = R.generate(lm, prompt, 6, uniforms)
    assert g.finished and len(g.frames) == 4
    assert g.frames[3].semantic == g.frames[3].normal == C.eos_token_id
    assert g.codes.shape == (C.num_codebooks, 3)
    assert np.array_equal(g.codes, base.codes[:, :3])


def test_teacher_forced_on_own_codes_replays(model):
    prompt = _prompt()
    free = R.generate(model, prompt, 8, R.seeded_uniforms(2, C))
    emitted = free.frames[: free.codes.shape[1]]  # the calibrated weights may stop by eos
    assert len(emitted) >= 2
    cols = np.concatenate([np.array([f.semantic for f in emitted])[None], free.codes], axis=0).T
    tf = R.generate(
        model, prompt, len(emitted), [(f.u_slow, f.u_fast) for f in emitted], forced=cols
    )
    for a, b in zip(emitted, tf.frames, strict=True):
        assert a.semantic == b.semantic and np.array_equal(a.codes, b.codes)


def test_ras_rule_and_first_frame_window_quirk(model):
    # The rule on crafted logits: 20 near-equal tokens; u makes the normal draw pick 7 and
    # the RAS draw pick 9 (weight p / -log u: u near 1 wins, u near 0 loses).
    logits = torch.full((1, C.semantic_count + 1), -10.0)
    logits[0, :20] = 5.0
    logits[0, 7], logits[0, 9] = 5.2, 5.1
    u = torch.full((1, 2, C.semantic_count + 1), 0.5)
    u[0, 0, 7] = 0.999
    u[0, 1, 7], u[0, 1, 9] = 1e-30, 0.999
    seven = C.semantic_begin_id + 7
    assert int(R.draw_semantic(logits, u, None, C).semantic) == seven  # step 0: no RAS
    empty = torch.full((1, 10), -1)
    assert int(R.draw_semantic(logits, u, empty, C).semantic) == seven
    w = empty.clone()
    w[0, 3] = seven
    d = R.draw_semantic(logits, u, w, C)
    assert bool(d.used_high) and int(d.semantic) == C.semantic_begin_id + 9
    # eos is never replaced, even when in the window
    logits_eos = torch.full((1, C.semantic_count + 1), -10.0)
    logits_eos[0, -1] = 5.0
    u[0, 1, -1] = 1e-30
    w[0, 4] = C.eos_token_id
    assert int(R.draw_semantic(logits_eos, u, w, C).semantic) == C.eos_token_id
    # The window: after step 0 it is empty (step 0's token is NOT added), then it rolls.
    s = torch.tensor([seven])
    w0 = R.next_window(None, s, 10)
    assert (w0 == -1).all()
    w1 = R.next_window(w0, torch.tensor([seven + 1]), 10)
    assert w1[0, -1] == seven + 1 and (w1[0, :-1] == -1).all()

    # In generate: frame k's window holds frames 1..k-1's semantics (last 10), never frame 0's.
    g = R.generate(model, _prompt(), 16, R.seeded_uniforms(9, C))
    sems = [f.semantic for f in g.frames]
    for k, f in enumerate(g.frames):
        want = sems[1:k][-10:] if k >= 2 else []
        want = [-1] * (10 - len(want)) + want
        assert f.window.tolist() == want, k
        repeated = f.normal in want and C.semantic_begin_id <= f.normal <= C.semantic_end_id
        assert f.used_high == (repeated and k > 0)
        assert f.semantic == (f.high if f.used_high else f.normal)


def test_prompt_checks(model):
    with pytest.raises(ValueError, match="prompt must be"):
        R.generate(model, np.zeros((10, 4), np.int64), 2)
    with pytest.raises(ValueError, match="smaller than"):
        R.generate(model, np.zeros((11, C.max_seq_len), np.int64), 2)


# -- names ---------------------------------------------------------------------------------------


def test_state_dict_has_publisher_names(model):
    keys = set(model.state_dict())
    assert "freqs_cis" not in keys and "fast_freqs_cis" not in keys  # non-persistent, as theirs
    assert {
        "embeddings.weight",
        "codebook_embeddings.weight",
        "norm.weight",
        "fast_embeddings.weight",
        "fast_norm.weight",
        "fast_output.weight",
        "layers.0.attention.wqkv.weight",
        "layers.0.attention.wqkv.bias",
        "layers.0.attention.wo.weight",
        "layers.0.feed_forward.w1.weight",
        "layers.0.feed_forward.w2.weight",
        "layers.0.feed_forward.w3.weight",
        "layers.0.attention_norm.weight",
        "layers.0.ffn_norm.weight",
        "fast_layers.0.attention.wqkv.weight",
    } <= keys
    assert "fast_layers.0.attention.wqkv.bias" not in keys  # fast AR: no biases
    assert "layers.0.attention.wo.bias" not in keys
    assert not any(k.startswith(("output", "fast_project_in")) for k in keys)  # tied; Identity
    sd = model.state_dict()
    assert sd["codebook_embeddings.weight"].shape == (C.codebook_size * C.num_codebooks, C.dim)
    assert sd["fast_output.weight"].shape == (C.codebook_size, C.fast_dim)
    qkv = (C.n_head + 2 * C.n_local_heads) * C.head_dim
    assert sd["layers.0.attention.wqkv.weight"].shape == (qkv, C.dim)


@pytest.mark.parametrize("config", [REDUCED, PUBLISHED], ids=["reduced", "published"])
def test_state_dict_matches_weights_helper(config):
    from conversion.audio8_tts import weights

    with torch.device("meta"):
        m = R.Audio8LM(config)
    ours = {k: tuple(v.shape) for k, v in m.state_dict().items()}
    theirs = {k: tuple(v) for k, v in weights.lm_param_shapes(config).items()}
    assert sorted(set(ours) ^ set(theirs)) == []
    assert {k: v for k, v in ours.items() if theirs[k] != v} == {}
