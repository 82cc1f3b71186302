"""Chatterbox Turbo's T3 host (chatterbox_turbo/t3/host.py) against the publisher's own code.

Three references, each the publisher's code itself (chatterbox-tts 0.1.7, transformers 5):

- rows: `T3.prepare_input_embeds` as `inference_turbo` calls it, vs `prefill_embeds` and
  `speech_step_embeds` over `t3_host_arrays`;
- processors: the `LogitsProcessorList` that `inference_turbo` itself builds (captured from a
  run, not rebuilt here), vs core's `process_logits` with `TURBO_ORDER`, on random logits with
  -inf entries and repeated ids, the start token penalised at draw 0;
- the loop: `inference_turbo` with `torch.multinomial` replaced by the exponential race on
  seeded torch uniforms (recorded), vs `generate` over the exported reduced graph (converter +
  Core AI runtime) fed the recorded uniforms: the same tokens, draw for draw.

The model is test_t3_graph's reduced publisher `T3` (2 layers, 128 wide), with the start and
stop tokens' speech-head biases raised so that the start token is a real candidate at draw 0
(its step-0 penalty changes draws) and the loop stops on its own within the step budget.
"""

from __future__ import annotations

import dataclasses

import chatterbox  # noqa: F401  (a failed --no-deps install fails here, not skips)
import numpy as np
import pytest
import torch

import conversion.chatterbox_turbo.t3.host as host
from conversion.chatterbox_turbo.sampling import TURBO_ORDER, turbo_sampling
from conversion.chatterbox_turbo.t3.graphs import START_SPEECH, STOP_SPEECH, T3_VOCAB, t3_graph_spec
from conversion.chatterbox_turbo.t3.host import (
    TurboCond,
    generate,
    prefill_embeds,
    speech_step_embeds,
    t3_host_arrays,
)
from conversion.core.bundle import BundleWriter
from conversion.core.errors import UserError
from conversion.core.host.sampling import HF_ORDER, U_MAX, U_MIN, gumbel_argmax, process_logits
from conversion.core.runtime.session import Session
from tests.chatterbox_turbo.test_t3_graph import REDUCED_GPT2, gpt2_sizes, randomize, turbo_hp

torch.set_num_threads(1)

KV_LENGTH = 128
BUCKETS = (40, 64)
PROMPT_TOKENS = 20
TEXT = np.array([464, 2068, 7586, 21831, 18045, 625, 262, 16931, 3290, 13, 50, 30000])
MAX_GEN_LEN = 47  # inference_turbo's argument: at most 48 draws
SEEDS = tuple(range(10))
# Added to the speech head's bias (its logits have std ~1): the start token a likely draw (so
# draw 0's penalty on it moves draws), the stop token likely enough to end most runs, and a
# dozen favoured tokens so that drawn tokens come back (the penalty acts on top candidates).
START_BIAS, STOP_BIAS, FAVOURED_BIAS = 8.0, 4.0, 3.0
FAVOURED = torch.arange(12) * 37
SAMPLING = turbo_sampling()


@pytest.fixture(scope="module")
def t3():
    from chatterbox.models.t3 import T3

    with gpt2_sizes(REDUCED_GPT2):
        model = T3(turbo_hp())
    del model.tfmr.wte
    randomize(model, 0)
    with torch.no_grad():
        model.speech_head.bias[START_SPEECH] += START_BIAS
        model.speech_head.bias[STOP_SPEECH] += STOP_BIAS
        model.speech_head.bias[FAVOURED] += FAVOURED_BIAS
    return model.eval()


@pytest.fixture(scope="module")
def arrays(t3) -> dict[str, np.ndarray]:
    return t3_host_arrays(t3)


@pytest.fixture(scope="module")
def cond() -> TurboCond:
    g = torch.Generator().manual_seed(1)
    speaker = torch.nn.functional.normalize(torch.randn(1, 256, generator=g), dim=-1)
    prompt = torch.randint(0, 6561, (1, PROMPT_TOKENS), generator=g)
    return TurboCond(speaker_emb=speaker.numpy(), prompt_tokens=prompt.numpy())


def t3_cond(cond: TurboCond):
    from chatterbox.models.t3.modules.cond_enc import T3Cond

    return T3Cond(
        speaker_emb=torch.from_numpy(np.asarray(cond.speaker_emb)),
        cond_prompt_speech_tokens=torch.from_numpy(np.asarray(cond.prompt_tokens)),
    )


def publisher_run(t3, cond: TurboCond, seed: int) -> dict:
    """`inference_turbo` with its draw replaced by the race on seeded uniforms; its processor
    list and every call of it recorded."""
    import chatterbox.models.t3.t3 as t3_module

    gen = torch.Generator().manual_seed(seed)
    uniforms: list[np.ndarray] = []
    lists: list = []
    calls: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    class Recorded(t3_module.LogitsProcessorList):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            lists.append(self)

        def __call__(self, input_ids, scores, **kwargs):
            out = super().__call__(input_ids, scores.clone(), **kwargs)
            calls.append((input_ids.numpy().copy(), scores.numpy().copy(), out.numpy().copy()))
            return out

    def draw(probs: torch.Tensor, num_samples: int = 1) -> torch.Tensor:
        assert num_samples == 1 and probs.shape == (1, T3_VOCAB)
        u = torch.rand(T3_VOCAB, generator=gen).clamp_(U_MIN, U_MAX)
        uniforms.append(u.numpy().copy())
        return torch.argmax(probs[0] / -torch.log(u)).reshape(1, 1)

    saved = (t3_module.LogitsProcessorList, torch.multinomial)
    t3_module.LogitsProcessorList, torch.multinomial = Recorded, draw
    try:
        with torch.inference_mode():
            tokens = t3.inference_turbo(
                t3_cond(cond), torch.from_numpy(TEXT)[None].long(), max_gen_len=MAX_GEN_LEN
            )
    finally:
        t3_module.LogitsProcessorList, torch.multinomial = saved
    assert len(lists) == 1
    used = len(uniforms)
    # The rows the generator would have given had the loop gone on (for a faulty run's draws).
    while len(uniforms) < MAX_GEN_LEN + 1:
        uniforms.append(torch.rand(T3_VOCAB, generator=gen).clamp_(U_MIN, U_MAX).numpy())
    return {
        "tokens": tokens[0].numpy().astype(np.int64),
        "draws": used,
        "uniforms": np.stack(uniforms),
        "processors": lists[0],
        "calls": calls,
    }


@pytest.fixture(scope="module")
def runs(t3, cond) -> dict[int, dict]:
    return {seed: publisher_run(t3, cond, seed) for seed in SEEDS}


@pytest.fixture(scope="module")
def session(tmp_path_factory, t3):
    dest = tmp_path_factory.mktemp("turbo_t3_host") / "fp32"
    with BundleWriter(dest, "chatterbox_turbo", "fp32", overwrite=True) as writer:
        writer.add_graph(t3_graph_spec(t3, KV_LENGTH, BUCKETS))
    with Session(dest) as s:
        yield s


def run_loop(session, arrays, cond, seed_run, sampling=SAMPLING):
    return generate(
        session,
        arrays,
        cond,
        TEXT,
        sampling,
        seed_run["uniforms"],
        MAX_GEN_LEN + 1,
        BUCKETS,
        KV_LENGTH,
    )


# -- rows -----------------------------------------------------------------------------------------


def test_rows_match_prepare_input_embeds(t3, arrays, cond):
    with torch.inference_mode():
        reference, len_cond = t3.prepare_input_embeds(
            t3_cond=t3_cond(cond),
            text_tokens=torch.from_numpy(TEXT)[None].long(),
            speech_tokens=torch.full((1, 1), START_SPEECH),
            cfg_weight=0.0,
        )
        step_reference = t3.speech_emb(torch.tensor([[4321]])).numpy()
    ours = prefill_embeds(arrays, cond, TEXT)
    assert len_cond == 1 + PROMPT_TOKENS
    assert ours.shape == tuple(reference.shape) == (1, 1 + PROMPT_TOKENS + TEXT.size + 1, 128)
    rows_abs = float(np.abs(ours - reference.numpy()).max())
    step_abs = float(np.abs(speech_step_embeds(arrays, 4321) - step_reference).max())
    print(f"\nprefill rows max abs {rows_abs:.2e}, decode row max abs {step_abs:.2e}")
    # Only the speaker row is arithmetic (a 256-long fp32 dot product); the rest are lookups.
    assert rows_abs < 1e-6 and step_abs == 0.0
    np.testing.assert_array_equal(ours[0, 1:], reference.numpy()[0, 1:])


def test_bad_inputs_refused_in_one_line(arrays, cond):
    bad = [
        (lambda: prefill_embeds(arrays, cond, np.array([50276])), "text ids must be in"),
        (lambda: prefill_embeds(arrays, cond, np.array([], np.int64)), "one sequence"),
        (
            lambda: prefill_embeds(arrays, dataclasses.replace(cond, speaker_emb=np.ones(3)), TEXT),
            "speaker_emb must hold 256",
        ),
        (lambda: speech_step_embeds(arrays, T3_VOCAB), "out of range"),
        (
            lambda: generate(None, arrays, cond, TEXT, SAMPLING, 0, 200, BUCKETS, KV_LENGTH),
            "KV cache too short",
        ),
        (
            lambda: generate(
                None,
                arrays,
                cond,
                TEXT,
                dataclasses.replace(SAMPLING, min_p=0.05),
                0,
                4,
                BUCKETS,
                KV_LENGTH,
            ),
            "without CFG or min-p",
        ),
    ]
    for call, message in bad:
        with pytest.raises(UserError, match=message) as caught:
            call()  # session None: each must be refused before any graph call
        assert "\n" not in str(caught.value)


# -- processors -----------------------------------------------------------------------------------


def random_case(rng, scale: float, step0: bool) -> tuple[np.ndarray, np.ndarray]:
    """Logits with a few -inf entries (some of them penalised ids) and a history with repeats,
    negative and positive logits among its ids; at step 0 the history is the start token."""
    logits = (rng.standard_normal(T3_VOCAB) * scale).astype(np.float32)
    top = np.argsort(-logits)[:30]
    if step0:
        logits[START_SPEECH] = logits[top[rng.integers(0, 5)]] + 0.1  # a real candidate
        history = np.array([START_SPEECH])
    else:
        picks = np.concatenate([top[rng.integers(0, 30, 8)], rng.integers(0, T3_VOCAB, 8)])
        history = np.concatenate([picks, picks[:5]])  # repeated ids
        logits[history[3]] = -np.inf  # a penalised id already at -inf
    logits[rng.integers(0, T3_VOCAB, 6)] = -np.inf
    return logits, history


def hf(processors, history: np.ndarray, logits: np.ndarray) -> np.ndarray:
    ids = torch.from_numpy(history)[None].long()
    return processors(ids, torch.from_numpy(logits.copy())[None])[0].numpy()


def compare(processors, cases, sampling=SAMPLING) -> tuple[int, float, int]:
    """(cases whose kept set differs, max abs over kept scores, differing draws)."""
    kept_differ, worst, draws_differ = 0, 0.0, 0
    rng = np.random.default_rng(7)
    for logits, history in cases:
        theirs = hf(processors, history, logits)
        ours = process_logits(logits, sampling, history, candidates=None)
        kept = np.isfinite(theirs)
        if (kept != np.isfinite(ours)).any():
            kept_differ += 1
        else:
            worst = max(worst, float(np.abs(ours[kept] - theirs[kept]).max()))
        u = rng.random(T3_VOCAB, dtype=np.float32)
        probs = torch.softmax(torch.from_numpy(theirs), -1)
        theirs_draw = int(torch.argmax(probs / -torch.log(torch.from_numpy(u).clamp(U_MIN, U_MAX))))
        draws_differ += int(gumbel_argmax(ours, u)) != theirs_draw
    return kept_differ, worst, draws_differ


def processor_cases() -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(0)
    # Scale 0.5: top-k 1000 binds (top-p 0.95 would keep more); scale 3: top-p binds.
    return [random_case(rng, scale, i % 4 == 0) for scale in (0.5, 3.0) for i in range(60)]


def test_processors_match_inference_turbos_own(runs):
    processors = runs[SEEDS[0]]["processors"]
    names = [type(p).__name__ for p in processors]
    assert names == [
        "TemperatureLogitsWarper",
        "TopKLogitsWarper",
        "TopPLogitsWarper",
        "RepetitionPenaltyLogitsProcessor",
    ]
    cases = processor_cases()
    kept_differ, worst, draws_differ = compare(processors, cases)
    # The cases bite: top-k, top-p, the penalty and the -inf entries each act.
    kept = [np.isfinite(hf(processors, h, x)).sum() for x, h in cases]
    print(
        f"\n{len(cases)} random cases: kept {min(kept)}..{max(kept)} tokens; kept sets differ "
        f"{kept_differ}, max abs {worst:.2e}, draws differ {draws_differ}"
    )
    assert kept_differ == 0 and worst <= 1e-6 and draws_differ == 0
    # top-p binds (some cases keep few tokens) and so does top-k (without it, top-p keeps more).
    no_top_k = dataclasses.replace(SAMPLING, top_k=0)
    wider = [np.isfinite(process_logits(x, no_top_k, h, candidates=None)).sum() for x, h in cases]
    assert min(kept) < 50 and max(wider) > 1000
    # And on every call the publisher made in its own loops (its logits, its input_ids).
    calls = [c for run in runs.values() for c in run["calls"]]
    for ids, scores, out in calls:
        ours = process_logits(scores[0], SAMPLING, ids[0], candidates=None)
        np.testing.assert_array_equal(np.isfinite(ours), np.isfinite(out[0]))
        kept_mask = np.isfinite(out[0])
        assert np.abs(ours[kept_mask] - out[0][kept_mask]).max() <= 1e-6
    assert calls[0][0].tolist() == [[START_SPEECH]]  # draw 0's input_ids: the start token


def test_processor_faults_are_seen(runs):
    processors = runs[SEEDS[0]]["processors"]
    cases = processor_cases()
    hf_order = dataclasses.replace(SAMPLING, order=HF_ORDER)
    kept_differ, _, draws_differ = compare(processors, cases, hf_order)
    print(
        f"\npenalty first (HF's generate order): kept sets differ {kept_differ}/{len(cases)}, "
        f"draws differ {draws_differ}/{len(cases)}"
    )
    assert kept_differ > 0 and draws_differ > 0
    # Draw 0 without the start token in the penalty: its (kept, positive) score is not divided.
    step0 = [x for x, h in cases if h.tolist() == [START_SPEECH]]
    empty = np.zeros(0, np.int64)
    differ = sum(
        not np.array_equal(
            process_logits(x, SAMPLING, empty, candidates=None),
            hf(processors, np.array([START_SPEECH]), x),
        )
        for x in step0
    )
    print(f"start token left out of draw 0's penalty: {differ}/{len(step0)} draw-0 cases differ")
    assert differ == len(step0)


# -- the loop over the exported graph -------------------------------------------------------------


def test_loop_draws_the_publishers_tokens(session, arrays, cond, runs):
    lines, stops = [], 0
    for seed, run in runs.items():
        result = run_loop(session, arrays, cond, run)
        draws = run["draws"]
        lines.append(f"seed {seed}: {result.tokens.size} tokens, {draws} draws")
        assert result.steps == draws  # the same number of draws...
        np.testing.assert_array_equal(result.tokens, run["tokens"])  # ...and the same tokens
        assert result.stopped == (draws < MAX_GEN_LEN + 1)
        stops += result.stopped
    print("\n" + "; ".join(lines))
    assert 0 < stops < len(SEEDS)  # both endings happen: a drawn stop and the step budget
    assert any(START_SPEECH in run["tokens"] for run in runs.values())  # the start is a candidate


def count_differences(session, arrays, cond, runs, sampling=SAMPLING) -> tuple[int, int]:
    """(seeds whose tokens differ from the publisher's, draws that differ in all)."""
    seeds, draws = 0, 0
    for run in runs.values():
        ours = run_loop(session, arrays, cond, run, sampling).tokens
        theirs = run["tokens"]
        n = max(ours.size, theirs.size)
        a = np.pad(ours, (0, n - ours.size), constant_values=-1)
        b = np.pad(theirs, (0, n - theirs.size), constant_values=-1)
        seeds += int((a != b).any())
        draws += int((a != b).sum())
    return seeds, draws


def test_loop_faults_are_seen(session, arrays, cond, runs, monkeypatch):
    hf_order = dataclasses.replace(SAMPLING, order=HF_ORDER)
    first = count_differences(session, arrays, cond, runs, hf_order)
    monkeypatch.setattr(host, "penalty_history", lambda step, drawn: np.asarray(drawn, np.int64))
    no_start = count_differences(session, arrays, cond, runs)
    print(
        f"\npenalty first: {first[0]}/{len(SEEDS)} seeds differ ({first[1]} tokens); "
        f"start token left out of draw 0: {no_start[0]}/{len(SEEDS)} seeds ({no_start[1]} tokens)"
    )
    assert first[0] > 0 and no_start[0] > 0
    assert TURBO_ORDER != HF_ORDER
