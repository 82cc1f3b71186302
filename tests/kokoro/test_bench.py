"""`voxport bench kokoro`: --repeats repeats the measurement over one sentence set, --sentences
picks the set, and runtime calls are counted from the calls the session really received.

No runtime here: a stand-in bundle goes through a real `TimedSession` over a session that
records its calls; it makes a different number of calls per sentence (as a chunk split
again would), so a count derived from a constant per sentence cannot match.
"""

from __future__ import annotations

import numpy as np
import pytest

from conversion.cli.main import main
from conversion.core.errors import UserError
from conversion.core.host.buckets import BucketTable
from conversion.core.runtime.session import StandInSession
from conversion.core.runtime.timed_session import TimedSession
from conversion.kokoro import bench, gate, host
from conversion.kokoro.pipeline import ChunkResult


class CountingSession(StandInSession):
    manifest = None
    bundle = None  # TimedSession reads it (bench --profile re-runs the bundle's graphs)

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def run(self, graph, function, inputs, state="default"):
        self.calls.append((graph, function))
        return {}


class StandInBundle:
    """Calls the session `plan[len(ids)]` times per graph; 2 frames of audio per call."""

    def __init__(self, plan: dict[int, dict[str, int]]) -> None:
        self.raw = CountingSession()
        self.session = TimedSession(self.raw)
        self.tables = {"vocoder": BucketTable.one_dim("L", [64, 128])}
        self.plan = plan

    def synthesize_ids(self, ids, ref_s, speed=1.0, seed=0, draws=None) -> ChunkResult:
        for graph, n in self.plan[len(ids)].items():
            for _ in range(n):
                self.session.run(graph, f"{graph}_x", {})
        return ChunkResult(np.zeros(1200 * 10, np.float32), np.array([5, 5]), {}, 0.0)


def _cases(n_ids: list[int]):
    return [(host.Chunk("x", "x" * (k - 2), list(range(k))), np.zeros((1, 256))) for k in n_ids]


def test_repeats_repeat_the_same_sentences_and_calls_are_counted():
    cases = _cases([5, 9])
    once = dict.fromkeys(("predictor", "prosody", "vocoder"), 1)
    twice = {g: 2 for g in once}  # a sentence split again: every graph twice
    pipeline = StandInBundle({5: once, 9: twice})
    pipeline.session.run("predictor", "warm", {})  # before the bench: not counted
    seen: list[int] = []
    figures = bench.measure(
        cases, pipeline, {"eager_torch": lambda c, r: seen.append(len(c.ids))}, 3
    )
    assert seen == [5, 9] * 3  # the same two sentences in each of the 3 repeats
    assert figures["sentences"] == 2 and figures["repeats"] == 3
    assert figures["runtime_calls"] == len(pipeline.raw.calls) - 1 == 27
    assert figures["audio_s"] == 1.0  # 2 sentences x 12,000 samples at 24 kHz, one pass
    assert figures["runtime_calls_per_audio_s"] == 9.0  # 27 calls over 3 x 1 s
    assert figures["vocoder_calls_per_sentence"] == 1.5
    for name in ("eager_torch", "coreai_bundle"):
        assert figures[f"{name}_rtf_min"] <= figures[f"{name}_rtf"] <= figures[f"{name}_rtf_max"]


def test_sentence_set_is_its_own_knob():
    assert bench.bench_sentences("published", 5) == gate.FIXTURE_SENTENCES[:5]
    assert bench.BENCH_SENTENCES >= 6  # 2 workers share the default set evenly
    assert bench.bench_sentences("published") == gate.FIXTURE_SENTENCES[: bench.BENCH_SENTENCES]
    assert bench.bench_sentences("reduced") == gate.SHORT_SENTENCES
    with pytest.raises(UserError, match="--sentences"):
        bench.bench_sentences("reduced", len(gate.SHORT_SENTENCES) + 1)
    with pytest.raises(UserError, match="--repeats"):
        bench.measure(_cases([5]), StandInBundle({5: {}}), {}, 0)


def test_cli_refuses_bad_counts_before_loading_anything(capsys):
    assert main(["bench", "kokoro", "--config", "reduced", "--sentences", "99"]) == 2
    assert "--sentences" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:  # argparse's own refusal (`values.count`), one line
        main(["bench", "kokoro", "--config", "reduced", "--repeats", "0"])
    assert e.value.code == 2 and "--repeats" in capsys.readouterr().err
