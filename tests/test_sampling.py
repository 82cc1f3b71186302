"""The host sampler and the in-graph GumbelSampler draw the same tokens; both draw correctly.

Agreement is checked eagerly and through the Core AI converter + runtime; correctness of the
draw itself is checked statistically (frequencies vs softmax) and on hand-computed examples.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.stats import chisquare

import conversion.core.host.sampling as core_sampling
from conversion.audio8_tts.sampling import AUDIO8_ORDER
from conversion.chatterbox.sampling import CHATTERBOX_ORDER
from conversion.core.host.sampling import (
    DEFAULT_CANDIDATES,
    HF_ORDER,
    GumbelSampler,
    SamplingConfig,
    SamplingOrder,
    apply_repetition_penalty,
    cfg_combine,
    process_logits,
    sample,
)

V = 1024
WINDOW = 16
N_SETS = 100

# name -> (config, logit scale). Scale 1 makes top-p 0.95 want hundreds of tokens, so the
# candidate bound is exercised; scale 3 gives peaked distributions where every filter bites.
CONFIGS: dict[str, tuple[SamplingConfig, float]] = {
    "chatterbox": (
        SamplingConfig(
            temperature=0.8,
            repetition_penalty=1.2,
            min_p=0.05,
            top_p=0.95,
            cfg_weight=0.5,
            order=CHATTERBOX_ORDER,
        ),
        3.0,
    ),
    "chatterbox_hf_order": (
        SamplingConfig(
            temperature=0.8, repetition_penalty=1.2, min_p=0.05, top_p=0.95, cfg_weight=0.5
        ),
        3.0,
    ),
    "audio8": (SamplingConfig(temperature=0.7, top_k=50, top_p=0.8, order=AUDIO8_ORDER), 3.0),
    "topk50_topp08": (SamplingConfig(top_k=50, top_p=0.8), 3.0),
    "plain": (SamplingConfig(), 3.0),
    "wide_top_p_cfg": (SamplingConfig(top_p=0.95, cfg_weight=0.5), 1.0),
}


def _case(name: str, n: int = N_SETS, seed: int = 0) -> dict[str, np.ndarray]:
    """n logit sets with uniforms, an unconditional branch and a token window near the top."""
    _, scale = CONFIGS[name]
    rng = np.random.default_rng([seed, len(name)])
    logits = (rng.standard_normal((n, V)) * scale).astype(np.float32)
    uncond = (logits + rng.standard_normal((n, V)) * scale * 0.5).astype(np.float32)
    u = rng.uniform(size=(n, V)).astype(np.float32)
    top = np.argsort(-logits, axis=-1)[:, :20]
    # Half the window from each row's top 20 (so the penalty changes draws), then random, then pad.
    prev = np.concatenate(
        [
            np.take_along_axis(top, rng.integers(0, 20, (n, WINDOW // 2)), axis=-1),
            rng.integers(0, V, (n, WINDOW // 4)),
            np.full((n, WINDOW - WINDOW // 2 - WINDOW // 4), -1),
        ],
        axis=-1,
    ).astype(np.int32)
    return {"logits": logits, "uniforms": u, "previous_tokens": prev, "uncond_logits": uncond}


def _graph_inputs(sampler: GumbelSampler, case: dict[str, np.ndarray], rows) -> dict:
    return {k: case[k][rows] for k in sampler.input_names}


def _host_draws(cfg: SamplingConfig, case: dict[str, np.ndarray]) -> np.ndarray:
    return sample(
        case["logits"],
        case["uniforms"],
        cfg,
        case["previous_tokens"],
        case["uncond_logits"],
        candidates=DEFAULT_CANDIDATES,
    )


# -- (1) host == eager graph -------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CONFIGS))
def test_host_and_eager_graph_draw_the_same_tokens(name: str) -> None:
    cfg, _ = CONFIGS[name]
    case = _case(name)
    sampler = GumbelSampler(V, cfg, candidates=DEFAULT_CANDIDATES)
    inputs = _graph_inputs(sampler, case, slice(None))
    with torch.no_grad():
        graph = sampler(*(torch.from_numpy(v) for v in inputs.values())).numpy()
    host = _host_draws(cfg, case)
    assert graph.dtype == np.int32 and graph.shape == (N_SETS,)
    assert (graph == host).sum() == N_SETS
    # Row by row through the 1-D host API gives the same draws as the batched call.
    one_by_one = [
        sample(
            case["logits"][i],
            case["uniforms"][i],
            cfg,
            case["previous_tokens"][i],
            case["uncond_logits"][i],
        )
        for i in range(10)
    ]
    assert one_by_one == host[:10].tolist()


# Every combination of the order's knobs, on configs where each knob can change the kept set.
KNOBS = [f.name for f in dataclasses.fields(SamplingOrder)]
ALL_ORDERS = [
    SamplingOrder(**dict(zip(KNOBS, v, strict=True)))
    for v in itertools.product((False, True), repeat=len(KNOBS))
]
KNOB_CONFIGS = {
    "topk_topp_minp": dict(temperature=0.7, top_k=50, top_p=0.8, min_p=0.05),
    "topp_minp": dict(temperature=1.3, top_p=0.9, min_p=0.02),
    # The penalty: `penalty_after_filters` moves it past the filters (it changes nothing without).
    "topk_topp_penalty": dict(temperature=0.7, top_k=50, top_p=0.8, repetition_penalty=1.2),
    "minp_penalty": dict(temperature=0.9, min_p=0.05, repetition_penalty=1.3),
}


@pytest.mark.parametrize("base", list(KNOB_CONFIGS))
@pytest.mark.parametrize(
    "order", ALL_ORDERS, ids=lambda o: "".join("1" if getattr(o, k) else "0" for k in KNOBS)
)
def test_host_and_eager_graph_agree_for_every_order(order: SamplingOrder, base: str) -> None:
    """The knobs are independent: host and graph agree on any combination, not only on the
    orders models use today."""
    cfg = SamplingConfig(**KNOB_CONFIGS[base], order=order)
    case = _case("topk50_topp08", seed=2)  # scale 3: every filter bites
    sampler = GumbelSampler(V, cfg, candidates=DEFAULT_CANDIDATES)
    inputs = _graph_inputs(sampler, case, slice(None))
    with torch.no_grad():
        graph = sampler(*(torch.from_numpy(v) for v in inputs.values())).numpy()
    assert (graph == _host_draws(cfg, case)).all()


def test_orders() -> None:
    assert SamplingConfig().order is HF_ORDER == SamplingOrder()
    assert CHATTERBOX_ORDER == SamplingOrder(min_p_before_top_p=True)
    assert AUDIO8_ORDER == SamplingOrder(
        filter_on_raw_scores=True, top_p_over_whole_vocab=True, top_p_drops_crossing_token=True
    )
    # Each knob changes some kept set on the filter-checking cases (no knob is dead).
    case = _case("topk50_topp08")
    for knob in KNOBS:
        for base in KNOB_CONFIGS.values():
            on = SamplingConfig(**base, order=SamplingOrder(**{knob: True}))
            off = SamplingConfig(**base)
            prev = case["previous_tokens"]
            kept_on = np.isfinite(process_logits(case["logits"], on, prev))
            kept_off = np.isfinite(process_logits(case["logits"], off, prev))
            if (kept_on != kept_off).any():
                break
        else:
            pytest.fail(f"{knob} changes nothing")


def test_core_names_no_model() -> None:
    """Core's sampler takes a model's order; the orders live in the models' folders."""
    source = Path(core_sampling.__file__).read_text().lower()
    assert "chatterbox" not in source
    assert "audio8" not in source


def test_configs_exercise_the_filters() -> None:
    """Guard the agreement tests against vacuity: the filters, penalty and bound really act."""
    kept = {}
    for name, (cfg, _) in CONFIGS.items():
        c = _case(name)
        args = (cfg, c["previous_tokens"], c["uncond_logits"])
        kept[name] = np.isfinite(process_logits(c["logits"], *args)).sum(-1)
        if name == "wide_top_p_cfg":
            unbounded = np.isfinite(process_logits(c["logits"], *args, candidates=None)).sum(-1)
            assert (unbounded > DEFAULT_CANDIDATES).mean() > 0.9
            assert (kept[name] <= DEFAULT_CANDIDATES).all()
    assert (kept["plain"] == V).all()
    for name in ("chatterbox", "audio8", "topk50_topp08"):
        assert 1 < kept[name].mean() < 50, name
    # The penalty changes some draws (the windows hold top tokens).
    cfg, _ = CONFIGS["chatterbox"]
    c = _case("chatterbox")
    no_pen = dataclasses.replace(cfg, repetition_penalty=1.0)
    with_pen = _host_draws(cfg, c)
    without = _host_draws(no_pen, c)
    assert (with_pen != without).sum() >= 5


# -- (2) host == the Core AI runtime -----------------------------------------------------------


@pytest.fixture(scope="module")
def coreai_sampler(tmp_path_factory):
    """One bundle, one function per config (B=1, V=1024), loaded once."""
    from conversion.core.bundle import BundleWriter
    from conversion.core.export.program import FunctionSpec, GraphSpec
    from conversion.core.runtime.session import Session

    samplers = {n: GumbelSampler(V, cfg) for n, (cfg, _) in CONFIGS.items()}
    spec = GraphSpec(
        "sampler",
        [FunctionSpec(n, s, s.example_inputs(1, WINDOW), ["token"]) for n, s in samplers.items()],
    )
    dest = Path(tmp_path_factory.mktemp("sampling")) / "bundle"
    t0 = time.perf_counter()
    with BundleWriter(dest, model="sampling-test") as bw:
        bw.add_graph(spec)
    export_s = time.perf_counter() - t0
    with Session(dest) as session:
        yield session, samplers, export_s


@pytest.mark.parametrize("name", list(CONFIGS))
def test_coreai_runtime_draws_the_host_tokens(name: str, coreai_sampler) -> None:
    session, samplers, _ = coreai_sampler
    cfg, _ = CONFIGS[name]
    case = _case(name, seed=1)
    host = _host_draws(cfg, case)
    drawn = []
    t0 = time.perf_counter()
    for i in range(N_SETS):
        out = session.run("sampler", name, _graph_inputs(samplers[name], case, slice(i, i + 1)))
        drawn.append(int(out["token"].reshape(-1)[0]))
    per_call_ms = (time.perf_counter() - t0) / N_SETS * 1e3
    agree = int((np.array(drawn) == host).sum())
    print(f"{name}: {agree}/{N_SETS} agree, {per_call_ms:.2f} ms/call")
    assert agree == N_SETS


# -- (3) the draw is a correct sampler ---------------------------------------------------------


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max())
    return e / e.sum()


def _frequencies(logits: np.ndarray, cfg: SamplingConfig, n: int, seed: int) -> np.ndarray:
    u = np.random.default_rng(seed).uniform(size=(n, logits.size)).astype(np.float32)
    draws = sample(np.tile(logits, (n, 1)), u, cfg)
    return np.bincount(draws, minlength=logits.size)


def test_unfiltered_draws_follow_softmax() -> None:
    logits = np.array([2.0, 1.0, 0.5, 0.0, -0.5, -1.0, -2.0, 1.5], dtype=np.float32)
    n = 20_000
    counts = _frequencies(logits, SamplingConfig(), n, seed=123)
    p = _softmax(logits.astype(np.float64))
    assert chisquare(counts, p * n).pvalue > 1e-3
    assert np.abs(counts / n - p).max() < 0.012
    # The test has teeth: the same counts reject a slightly different distribution.
    assert chisquare(counts, _softmax(logits.astype(np.float64) / 0.85) * n).pvalue < 1e-6


def test_filtered_draws_follow_the_kept_distribution() -> None:
    probs = np.array([0.5, 0.3, 0.15, 0.05])
    n = 20_000
    counts = _frequencies(np.log(probs).astype(np.float32), SamplingConfig(top_p=0.7), n, 7)
    expected = np.array([0.5, 0.3, 0.0, 0.0]) / 0.8  # top-p 0.7 keeps {0.5, 0.3}
    assert counts[2:].sum() == 0
    assert chisquare(counts[:2], expected[:2] * n).pvalue > 1e-3


# -- (4) the processors on hand-computed examples ----------------------------------------------


def _kept(probs, cfg: SamplingConfig) -> list[int]:
    scores = process_logits(np.log(np.asarray(probs)).astype(np.float32), cfg, candidates=None)
    return np.flatnonzero(np.isfinite(scores)).tolist()


def test_top_p_keeps_the_best_token_and_the_crossing_token() -> None:
    assert _kept([0.9, 0.05, 0.05], SamplingConfig(top_p=0.5)) == [0]
    assert _kept([0.9, 0.05, 0.05], SamplingConfig(top_p=0.5, order=AUDIO8_ORDER)) == [0]
    # "hf": keep while the mass before a token is < top_p (0.5 < 0.7 keeps the 0.3).
    assert _kept([0.15, 0.5, 0.05, 0.3], SamplingConfig(top_p=0.7)) == [1, 3]
    # Audio8's legacy rule drops the token whose inclusive cumulative sum passes top_p.
    assert _kept([0.15, 0.5, 0.05, 0.3], SamplingConfig(top_p=0.7, order=AUDIO8_ORDER)) == [1]


def test_min_p_on_the_temperature_scaled_distribution() -> None:
    probs = [0.5, 0.3, 0.15, 0.05]
    assert _kept(probs, SamplingConfig(min_p=0.2)) == [0, 1, 2]  # 0.05 < 0.2 * 0.5
    # T=0.5 squares the ratios to the max: 1, 0.36, 0.09, 0.01 -> only 0 and 1 pass 0.2.
    assert _kept(probs, SamplingConfig(min_p=0.2, temperature=0.5)) == [0, 1]


def test_chatterbox_order_applies_top_p_after_min_p() -> None:
    probs = [0.4, 0.3, 0.2, 0.06, 0.04]
    both = {"min_p": 0.2, "top_p": 0.75}
    # hf: top-p on the full distribution keeps 0,1,2 (mass before 0.2 is 0.7 < 0.75).
    assert _kept(probs, SamplingConfig(**both)) == [0, 1, 2]
    # chatterbox: min-p keeps 0,1,2, renormalised 0.444, 0.333, 0.222 -> 0.778 >= 0.75 cuts 2.
    assert _kept(probs, SamplingConfig(**both, order=CHATTERBOX_ORDER)) == [0, 1]


def test_top_k_and_the_candidate_bound() -> None:
    logits = np.linspace(0.0, -1.0, 200, dtype=np.float32)
    assert _kept(np.exp(logits), SamplingConfig(top_k=3)) == [0, 1, 2]
    bounded = process_logits(logits, SamplingConfig(top_p=0.99), candidates=DEFAULT_CANDIDATES)
    assert np.isfinite(bounded).sum() == DEFAULT_CANDIDATES
    assert (
        np.isfinite(process_logits(logits, SamplingConfig(top_p=0.99), candidates=None)).sum() > 150
    )


def test_repetition_penalty_and_cfg_by_hand() -> None:
    logits = np.array([2.0, -1.0, 0.5, 3.0], dtype=np.float32)
    prev = np.array([0, 1, -1, 1, -1])
    out = apply_repetition_penalty(logits, prev, 2.0)
    np.testing.assert_array_equal(out, [1.0, -2.0, 0.5, 3.0])
    sampler = GumbelSampler(4, SamplingConfig(repetition_penalty=2.0))
    np.testing.assert_array_equal(
        sampler._penalise(torch.from_numpy(logits)[None], torch.from_numpy(prev)[None].int())[0],
        out,
    )
    cond = np.array([1.0, 2.0], dtype=np.float32)
    uncond = np.array([3.0, 0.0], dtype=np.float32)
    np.testing.assert_allclose(cfg_combine(cond, uncond, 0.5), [0.0, 3.0])


def test_a_recorded_u_replays_the_draw() -> None:
    cfg, _ = CONFIGS["plain"]
    c = _case("plain", n=50)
    first = _host_draws(cfg, c)
    assert (_host_draws(cfg, {k: v.copy() for k, v in c.items()}) == first).all()
    # A different u changes most draws: the draw really depends on it.
    other = {**c, "uniforms": np.random.default_rng(9).uniform(size=(50, V)).astype(np.float32)}
    assert (_host_draws(cfg, other) != first).sum() > 25


def test_config_rejects_bad_values() -> None:
    for bad in ({"temperature": 0.0}, {"top_p": 0.0}, {"min_p": 1.5}, {"order": "vllm"}):
        with pytest.raises(ValueError):
            SamplingConfig(**bad)
