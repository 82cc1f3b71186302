"""Chatterbox Turbo's T3 graph (chatterbox_turbo/t3/graphs.py) against the publisher's own code.

The reference is the publisher's `T3.inference_turbo` itself (chatterbox-tts 0.1.7: its
`prepare_input_embeds`, then `t3.tfmr(inputs_embeds=..., past_key_values=..., use_cache=True)`
over transformers' `GPT2Model` with its HF cache, then `speech_head`), teacher-forced:
`torch.multinomial` is patched to return the given tokens and a hook on `speech_head` records
the logits of every call. Our side is the re-authored graph, eager and through the Core AI
runtime, fed the publisher's own input embeddings (Turbo's host is not this file's subject).

The model is the publisher's `T3(hp)` with `ChatterboxTurboTTS.from_local`'s hp, built at a
reduced GPT-2 (2 layers, 128 wide, 4 heads, 256 positions) by patching the publisher's
`GPT2_MEDIUM_CONFIG` while it is constructed, with seeded random weights: LayerNorm gains and
every bias perturbed, learned positions as large as the embeddings, so that a wrong bias,
norm or position moves the logits. The conditioning is a T3Cond (speaker embedding + 20
prompt speech tokens), cfg_weight 0 as `inference_turbo` passes it.
"""

from __future__ import annotations

import contextlib
import copy
import time
from collections.abc import Iterator

import chatterbox  # noqa: F401  (a failed --no-deps install fails here, not skips)
import numpy as np
import pytest
import torch

from conversion.chatterbox_turbo.t3.graphs import (
    GRAPH,
    START_SPEECH,
    STOP_SPEECH,
    T3_VOCAB,
    build_t3_graph,
    prefill_function_name,
    t3_graph_spec,
)
from conversion.core.bundle import BundleWriter
from conversion.core.runtime.session import Session

torch.set_num_threads(1)

# The reduced GPT-2 (the published one: 24 layers, 1024 wide, 16 heads, 8,196 positions).
REDUCED_GPT2 = {"n_layer": 2, "n_embd": 128, "hidden_size": 128, "n_head": 4, "n_positions": 256}
KV_LENGTH = 128
BUCKET = 48  # the exported prefill bucket; the eager check uses a larger one too
PROMPT_TOKENS = 20
TEXT = np.array([464, 2068, 7586, 21831, 18045, 625, 262, 16931, 3290, 13, 50, 30000])
FORCED = [17, 4000, 251, 6560, 3, 17, 1024, 777, 6000]  # 9 draws: 8 decode steps
PAD = 7.5  # junk in a bucket's padding rows: must not reach any logit
# Measured (the seeds below; logits have std ~1, |max| 4.6): eager re-authoring vs publisher
# max abs 1.4e-6, runtime fp32 vs publisher 2.6e-6, cos 1 - 1e-10 both. The bar leaves ~8x
# headroom for other CPUs' fp32 reordering and sits 30x below the smallest fault tried:
# erf-GELU for gelu_new moves the logits by 6.1e-4 (cos 1 - 1.1e-8, which the cosine alone
# would pass); a position off by one moves them by ~3 (cos 0.76).
MAX_ABS = 2e-5
COS_MIN = 0.999999


def cos(a: np.ndarray, b: np.ndarray) -> float:
    a = np.asarray(a, np.float64).ravel()
    b = np.asarray(b, np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


@contextlib.contextmanager
def gpt2_sizes(sizes: dict[str, int]) -> Iterator[None]:
    """Make `T3(hp)` build a GPT-2 of `sizes` (the publisher's config dict, restored after)."""
    from chatterbox.models.t3 import llama_configs

    config = llama_configs.LLAMA_CONFIGS["GPT2_medium"]
    saved = dict(config)
    config.update(sizes)
    try:
        yield
    finally:
        config.clear()
        config.update(saved)


def turbo_hp():
    """`ChatterboxTurboTTS.from_local`'s T3 hyper-parameters, set as it sets them."""
    from chatterbox.models.t3.modules.t3_config import T3Config

    hp = T3Config(text_tokens_dict_size=50276)
    hp.llama_config_name = "GPT2_medium"
    hp.speech_tokens_dict_size = 6563
    hp.input_pos_emb = None
    hp.speech_cond_prompt_len = 375
    hp.use_perceiver_resampler = False
    hp.emotion_adv = False
    return hp


def randomize(t3: torch.nn.Module, seed: int) -> None:
    """Seeded weights with every term visible: matrices ~ N(0, 1/fan_in), embeddings and
    positions O(1), LayerNorm gains 1 + N(0, 0.1^2), biases N(0, 0.1^2)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in t3.named_parameters():
            noise = torch.randn(p.shape, generator=g)
            if name.endswith("bias"):
                p.copy_(0.1 * noise)
            elif ".ln_" in name:
                p.copy_(1 + 0.1 * noise)
            elif name.endswith("wpe.weight"):
                p.copy_(0.5 * noise)
            elif p.ndim == 2 and "emb" not in name and "wpe" not in name:
                fan_in = p.shape[0] if ".h." in name else p.shape[1]  # Conv1D is [in, out]
                p.copy_(noise / fan_in**0.5)
            else:
                p.copy_(noise)


@pytest.fixture(scope="module")
def t3():
    from chatterbox.models.t3 import T3

    with gpt2_sizes(REDUCED_GPT2):
        model = T3(turbo_hp())
    del model.tfmr.wte  # as from_local does: T3 feeds embeddings
    randomize(model, 0)
    return model.eval()


@pytest.fixture(scope="module")
def cond():
    from chatterbox.models.t3.modules.cond_enc import T3Cond

    g = torch.Generator().manual_seed(1)
    return T3Cond(
        speaker_emb=torch.nn.functional.normalize(torch.randn(1, 256, generator=g), dim=-1),
        cond_prompt_speech_tokens=torch.randint(0, 6561, (1, PROMPT_TOKENS), generator=g),
    )


@pytest.fixture(scope="module")
def embeds(t3, cond) -> np.ndarray:
    """The prefill rows as `inference_turbo` builds them: [1, 1 + prompt + text + 1, D]."""
    with torch.inference_mode():
        rows, _ = t3.prepare_input_embeds(
            t3_cond=copy.deepcopy(cond),
            text_tokens=torch.from_numpy(TEXT)[None].long(),
            speech_tokens=torch.full((1, 1), START_SPEECH),
            cfg_weight=0.0,
        )
    return rows.numpy().copy()


def step_embeds(t3, token: int) -> np.ndarray:
    """A decode step's row as `inference_turbo` feeds it: speech_emb(token), nothing added."""
    with torch.inference_mode():
        return t3.speech_emb(torch.tensor([[token]])).numpy().copy()


@pytest.fixture(scope="module")
def reference(t3, cond) -> np.ndarray:
    """[len(FORCED), V]: the publisher's logits before each forced draw."""
    records: list[np.ndarray] = []
    feed = iter(FORCED)
    hook = t3.speech_head.register_forward_hook(
        lambda _m, _i, out: records.append(out[0, -1].float().numpy().copy())
    )
    original = torch.multinomial
    torch.multinomial = lambda probs, num_samples: torch.tensor([[next(feed)]])
    try:
        tokens = t3.inference_turbo(
            copy.deepcopy(cond),
            torch.from_numpy(TEXT)[None].long(),
            max_gen_len=len(FORCED) - 1,
        )
    finally:
        torch.multinomial = original
        hook.remove()
    assert tokens[0].tolist() == FORCED  # the publisher drew what it was told
    return np.stack(records)


def padded(rows: np.ndarray, bucket: int) -> np.ndarray:
    out = np.full((1, bucket, rows.shape[2]), PAD, np.float32)
    out[:, : rows.shape[1]] = rows
    return out


def report(what: str, ours: np.ndarray, reference: np.ndarray) -> tuple[float, float]:
    worst = min(cos(o, r) for o, r in zip(ours, reference, strict=True))
    max_abs = float(np.abs(ours - reference).max())
    print(f"\n{what}: {len(ours)} logit rows, min cos {worst:.10f}, max abs {max_abs:.2e}")
    return worst, max_abs


# -- eager re-authoring vs the publisher (no export) -----------------------------------------------


def test_eager_graph_matches_publisher(t3, embeds, reference):
    graph = build_t3_graph(t3, KV_LENGTH)
    length = embeds.shape[1]
    assert length == 1 + PROMPT_TOKENS + TEXT.size + 1
    logits = []
    with torch.inference_mode():
        for bucket in (BUCKET, 96):  # two prefill shapes, each then the same decode steps
            graph.reset()
            row = graph(torch.from_numpy(padded(embeds, bucket)), torch.tensor([length]).int())
            steps = [row]
            for i, token in enumerate(FORCED[:-1]):
                position = torch.tensor([length + i], dtype=torch.int32)
                steps.append(graph(torch.from_numpy(step_embeds(t3, token)), position))
            logits.append(np.concatenate([s.numpy() for s in steps]))
    for bucket, ours in zip((BUCKET, 96), logits, strict=True):
        assert ours.shape == reference.shape == (len(FORCED), T3_VOCAB)
        worst, max_abs = report(f"eager P{bucket} vs publisher", ours, reference)
        assert worst >= COS_MIN and max_abs < MAX_ABS


# -- through the Core AI runtime ------------------------------------------------------------------


@pytest.fixture(scope="module")
def session(tmp_path_factory, t3):
    dest = tmp_path_factory.mktemp("turbo_t3") / "fp32"
    start = time.perf_counter()
    with BundleWriter(dest, "chatterbox_turbo", "fp32", overwrite=True) as writer:
        writer.add_graph(t3_graph_spec(t3, KV_LENGTH, (BUCKET,)))
    print(f"\nTurbo T3 reduced fp32 export: {time.perf_counter() - start:.1f} s")
    with Session(dest) as s:
        yield s


def test_runtime_prefill_and_decode_match_publisher(session, t3, embeds, reference):
    length = embeds.shape[1]
    session.reset_state(GRAPH)
    feed = {"embeds": padded(embeds, BUCKET), "length": np.array([length], np.int32)}
    logits = [session.run(GRAPH, prefill_function_name(BUCKET), feed)["logits"]]
    for i, token in enumerate(FORCED[:-1]):
        feed = {"embeds": step_embeds(t3, token), "position": np.array([length + i], np.int32)}
        logits.append(session.run(GRAPH, "decode", feed)["logits"])
    ours = np.concatenate(logits)
    assert ours.shape == reference.shape
    worst, max_abs = report("runtime fp32 vs publisher", ours, reference)
    assert worst >= COS_MIN and max_abs < MAX_ABS


# -- the spec and its refusals --------------------------------------------------------------------


def test_graph_spec_functions_and_state(t3):
    spec = t3_graph_spec(t3, KV_LENGTH, (32, BUCKET))
    assert [f.name for f in spec.functions] == ["prefill_P32", "prefill_P48", "decode"]
    assert len({id(f.module) for f in spec.functions}) == 1  # one module: weights + KV state
    module = spec.functions[0].module
    assert spec.functions[0].states == [
        f"layers.{i}.{s}" for i in range(2) for s in ("k_cache", "v_cache")
    ]
    assert module.layers[0].k_cache.shape == (1, 4, KV_LENGTH, 32)
    assert spec.name == GRAPH
    assert (spec.meta["vocab"], spec.meta["start_speech"], spec.meta["stop_speech"]) == (
        T3_VOCAB,
        START_SPEECH,
        STOP_SPEECH,
    )
    assert spec.functions[-1].inputs["embeds"].shape == (1, 1, 128)


@pytest.mark.parametrize(
    ("kv_length", "buckets", "message"),
    [
        (257, (48,), "kv_length 257 must be 2..256"),
        (KV_LENGTH, (KV_LENGTH + 1,), "longer than the KV cache"),
        (KV_LENGTH, (1,), "at least 2 rows"),
    ],
)
def test_sizes_refused_in_one_line(t3, kv_length, buckets, message):
    with pytest.raises(ValueError, match=message) as caught:
        t3_graph_spec(t3, kv_length, buckets)
    assert "\n" not in str(caught.value)
