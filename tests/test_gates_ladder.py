"""gates.ladder, gates.report and gates.plot."""

from __future__ import annotations

import io
import json
import math
import subprocess
import sys

import numpy as np
import pytest
from rich.console import Console

from gates import report
from gates.errors import ToleranceFailure
from gates.ladder import Measured, Rung, run_ladder
from gates.plot import plot_waveforms

RUNG_KEYS = {"name", "metric", "value", "threshold", "passed"}
OPTIONAL_RUNG_KEYS = {"detail", "seconds", "higher_is_better"}


def _pair_with_error(at: tuple[int, int], size: float) -> tuple[np.ndarray, np.ndarray]:
    ref = np.linspace(-1, 1, 48, dtype=np.float32).reshape(6, 8)
    cand = ref.copy()
    cand[at] += size
    return ref, cand


def test_pass_fail_and_direction():
    ref, cand = _pair_with_error((1, 2), 1e-4)
    rungs = [
        Rung("same", "cosine", 0.9999, lambda: (ref, ref)),
        # max_abs is registered lower-is-better: 1e-4 passes a 1e-3 bound, fails 1e-5.
        Rung("small error", "max_abs", 1e-3, lambda: (ref, cand)),
        Rung("tight bound", "max_abs", 1e-5, lambda: (ref, cand)),
        Rung("ready value", "custom", 0.5, lambda: 0.75),
    ]
    rep = run_ladder("toy", rungs, progress=False)
    assert [r.passed for r in rep.rungs] == [True, True, False, True]
    assert rep.rungs[1].value == pytest.approx(1e-4, rel=1e-2)
    assert not rep.passed
    assert [r.name for r in rep.failures] == ["tight bound"]
    with pytest.raises(ToleranceFailure) as info:
        rep.raise_for_failure()
    assert info.value.rung == "tight bound" and info.value.threshold == 1e-5


def test_explicit_direction_overrides_registry():
    rung = Rung("inverted", "max_abs", 1.0, lambda: (np.zeros(3), np.full(3, 2.0)), True)
    assert run_ladder("toy", [rung], progress=False).passed


def test_failed_tensor_rung_reports_worst_element():
    ref, cand = _pair_with_error((4, 5), 0.5)
    cand[0, 0] += 0.01
    rep = run_ladder("toy", [Rung("enc", "cosine", 0.999999, lambda: (ref, cand))], progress=False)
    r = rep.rungs[0]
    assert not r.passed
    assert r.stats["worst"]["index"] == [4, 5]
    assert r.stats["worst"]["reference"] == pytest.approx(float(ref[4, 5]))
    assert r.stats["worst"]["candidate"] == pytest.approx(float(ref[4, 5]) + 0.5)
    assert r.stats["reference"]["shape"] == [6, 8]
    assert r.stats["candidate"]["max"] == pytest.approx(float(cand.max()))
    assert "[4, 5]" in r.detail


def test_raising_rungs_fail_without_stopping_the_runner():
    def boom():
        raise RuntimeError("converter exploded")

    def child_crash():
        subprocess.run([sys.executable, "-c", "import os; os.abort()"], check=True)

    rungs = [
        Rung("boom", "cosine", 0.9, boom),
        Rung("child", "cosine", 0.9, child_crash),
        Rung("shapes", "cosine", 0.9, lambda: (np.zeros(3), np.zeros(4))),
        Rung("bad return", "cosine", 0.9, lambda: "oops"),
        Rung("fine", "cosine", 0.9, lambda: (np.ones(3), np.ones(3))),
    ]
    rep = run_ladder("toy", rungs, progress=False)
    assert [r.passed for r in rep.rungs] == [False, False, False, False, True]
    assert "converter exploded" in rep.rungs[0].detail
    assert "CalledProcessError" in rep.rungs[1].detail
    assert "ShapeMismatch" in rep.rungs[2].detail
    assert "TypeError" in rep.rungs[3].detail
    assert all(math.isnan(r.value) for r in rep.rungs[:4])


def test_stop_on_fail_skips_the_rest():
    rungs = [
        Rung("a", "custom", 1.0, lambda: 0.0),
        Rung("b", "custom", 0.0, lambda: pytest.fail("must not run")),
    ]
    rep = run_ladder("toy", rungs, stop_on_fail=True, progress=False)
    assert [r.passed for r in rep.rungs] == [False, False]
    assert "skipped" in rep.rungs[1].detail


def test_to_dict_schema_and_json_safety(tmp_path):
    ref = np.sin(np.linspace(0, 20, 4000))
    rungs = [
        Rung("identical", "psnr", 60.0, lambda: (ref, ref)),  # value is +inf
        Rung("broken", "cosine", 0.9, lambda: 1 / 0),  # value is NaN
        Rung("wer", "wer", 0.2, lambda: ("the cat sat", "the bat sat on")),
    ]
    rep = run_ladder("toy", rungs, progress=False)
    d = rep.to_dict()
    assert set(d) == {"model", "passed", "rungs"}
    assert d["model"] == "toy" and d["passed"] is False
    for rung in d["rungs"]:
        assert RUNG_KEYS <= set(rung) <= RUNG_KEYS | OPTIONAL_RUNG_KEYS
    assert d["rungs"][0]["value"] is None and d["rungs"][0]["passed"] is True
    assert d["rungs"][1]["value"] is None
    assert d["rungs"][2]["value"] == pytest.approx(2 / 3) and d["rungs"][2]["passed"] is False
    path = report.to_json(rep, tmp_path / "out" / "gate.json")
    text = path.read_text()
    assert "Infinity" not in text and "NaN" not in text
    assert json.loads(text) == json.loads(json.dumps(d))


def test_empty_ladder_does_not_pass():
    assert not run_ladder("toy", [], progress=False).passed


def test_plain_progress_lines(capsys):
    run_ladder("toy", [Rung("r1", "custom", 0.5, lambda: 1.0)], progress=True)
    out = capsys.readouterr().out
    assert "r1" in out and "PASS" in out


def test_markdown_and_table_list_every_rung():
    rungs = [
        Rung("encoder|fp16", "cosine", 0.99, lambda: (np.ones(4), np.ones(4))),
        Rung("vocoder", "max_abs", 1e-3, lambda: (np.zeros(4), np.full(4, 0.5))),
    ]
    rep = run_ladder("kokoro", rungs, progress=False)
    md = report.to_markdown(rep).splitlines()
    table = md[: md.index("")]
    assert md[0].startswith("| Rung |") and len(table) == 2 + len(rungs)
    assert md[-1].startswith("- vocoder: worst at")  # the failure's detail, under the table
    assert "encoder\\|fp16" in md[2] and "pass" in md[2]
    assert "vocoder" in md[3] and "**FAIL**" in md[3] and "0.5" in md[3] and "≤ 0.001" in md[3]
    buf = io.StringIO()
    report.render_table(rep, Console(file=buf, width=120, color_system=None))
    shown = buf.getvalue()
    assert "encoder|fp16" in shown and "vocoder" in shown and "FAIL" in shown


def test_measured_note_is_reported_for_a_passing_rung():
    rep = run_ladder(
        "toy",
        [Rung("draws", "agreement", 0.9, lambda: Measured(0.95, "miss at step 3"))],
        progress=False,
    )
    assert rep.passed and rep.rungs[0].value == 0.95 and rep.rungs[0].detail == "miss at step 3"
    assert "- draws: miss at step 3" in report.to_markdown(rep)


def test_bench_table_markdown():
    nested = {"fp16": {"RTF": 0.05, "load s": 1.5}, "int8": {"RTF": 0.04}}
    lines = report.bench_table_markdown(nested).splitlines()
    assert lines[0] == "| | RTF | load s |"
    assert lines[2] == "| fp16 | 0.05 | 1.5 |" and lines[3] == "| int8 | 0.04 | — |"
    flat = report.bench_table_markdown({"RTF": 0.05}).splitlines()
    assert flat[2] == "| RTF | 0.05 |"


def test_plot_writes_png(tmp_path):
    sr = 16000
    t = np.arange(sr) / sr
    ref = np.sin(2 * np.pi * 220 * t)
    cand = ref[:-100] + 0.01 * np.random.default_rng(0).normal(size=sr - 100)
    path = plot_waveforms(ref, cand, sr, tmp_path / "diff.png", title="toy")
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
