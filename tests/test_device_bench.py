"""`voxport device-bench`: VP_* checked before launch, the app launched with them, a new
result.json waited for, pulled back and summarised — against a stand-in `xcrun`
(tests/fake_xcrun.py) whose launch writes a result into the fake container."""

from __future__ import annotations

import json

import pytest

from conversion.cli.main import main
from conversion.device.device_bench import summarize

from .fake_xcrun import install, no_xcrun

APP = "com.example.voxport"
UDID = "00008120-000A1B2C3D4E5F60"
RESULT = {
    "device": {"machine": "iPhone17,1", "os": "Version 27.0 (Build 24A100)", "cores": 6},
    "runner": "coreai",
    "units": "cpu",
    "passes": 4,
    "load_ms": 812.5,
    "warm_pass_ms": 219.0,
    "peak_rss_mb": 301.75,
    "first_call_ms": 95.25,
    "warm_median_ms": {"decoder": 41.5, "text_encoder": 3.25},
    "audio_seconds": 2.4,
    "calls_per_audio_second": 1.25,
    "rtf": 0.0912,
}


def _bench(model, *env, extra=()):
    argv = ["device-bench", model, "--device", UDID, "--app-id", APP]
    for pair in env:
        argv += ["--env", pair]
    return main([*argv, *extra])


@pytest.mark.parametrize(
    ("model", "bench", "valid"),
    [
        ("kokoro", "kokoro.sing", ["kokoro.speak", "kokoro.text"]),
        (
            "chatterbox",
            "kokoro.speak",  # a bench of another model
            [
                "chatterbox.t3",
                "chatterbox.estimator",
                "chatterbox.vocoder",
                "chatterbox.speak",
                "chatterbox.text",
            ],
        ),
        (
            "chatterbox_turbo",
            "chatterbox.t3",  # Chatterbox's bench, not Turbo's
            [
                "chatterbox_turbo.t3",
                "chatterbox_turbo.estimator",
                "chatterbox_turbo.vocoder",
                "chatterbox_turbo.speak",
                "chatterbox_turbo.text",
            ],
        ),
        (
            "audio8-tts",
            "audio8.frames",
            ["audio8.frame", "audio8.codec", "audio8.speak", "audio8.text"],
        ),
    ],
)
def test_unknown_vp_bench_lists_the_valid_ones(tmp_path, monkeypatch, capsys, model, bench, valid):
    device = install(tmp_path, monkeypatch)
    assert _bench(model, f"VP_BENCH={bench}") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"unknown VP_BENCH '{bench}'" in err[0]
    assert err[0].endswith("choose one of " + ", ".join(valid))
    assert device.calls() == []


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ([], "VP_BENCH is not set"),
        (["VP_BENCH=kokoro.speak"], "VP_BUNDLE is not set"),
        (["VP_BENCH=kokoro.speak", "VP_BUNDLE=m", "VP_UNITS=npu"], "VP_UNITS='npu'"),
        (["VP_BENCH=kokoro.speak", "VP_BUNDLE=m", "VP_PASS=3"], "unknown variable VP_PASS"),
        (["VP_BENCH=kokoro.speak", "VP_BUNDLE=m", "VP_RUNNER=gpu"], "VP_RUNNER='gpu'"),
        (["VP_BENCH=kokoro.speak", "VP_BUNDLE=m", "VP_PASSES=0"], "VP_PASSES='0'"),
        (["VP_BENCH=kokoro.speak", "VP_BUNDLE=m", "VP_OUT=../x"], "VP_OUT='../x'"),
        (["VP_BENCH"], "expected KEY=VALUE"),
    ],
)
def test_bad_launch_variables_are_one_line_exit_2(tmp_path, monkeypatch, capsys, env, needle):
    device = install(tmp_path, monkeypatch)
    assert _bench("kokoro", *env) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0]
    assert device.calls() == []


def test_launch_then_result_pulled_back_and_summarised(tmp_path, monkeypatch, capsys):
    device = install(tmp_path, monkeypatch)
    monkeypatch.setenv("FAKE_LAUNCH_RESULT", json.dumps(RESULT))
    out = tmp_path / "out"
    env = ("VP_BENCH=kokoro.speak", "VP_BUNDLE=models/kokoro-fp32", "VP_PASSES=4")
    assert _bench("kokoro", *env, extra=("--out", str(out), "--poll", "0.01")) == 0
    printed = capsys.readouterr().out
    launches = [c for c in device.calls() if c[:4] == ["devicectl", "device", "process", "launch"]]
    assert len(launches) == 1 and launches[0][-1] == APP
    sent = json.loads(launches[0][launches[0].index("--environment-variables") + 1])
    assert sent == {
        "VP_BENCH": "kokoro.speak",
        "VP_BUNDLE": "models/kokoro-fp32",
        "VP_PASSES": "4",
        "VP_OUT": "bench/kokoro.speak",  # the default
    }
    pulled = json.loads((out / "result.json").read_text())
    assert pulled == {**RESULT, "bench": "kokoro.speak"}
    assert (out / "audio.wav").read_bytes() == b"RIFF-fake-wav"
    assert "on iPhone17,1, Version 27.0 (Build 24A100) (runner coreai, units cpu" in printed
    assert "load 812.5 ms, first call 95.2 ms, warm pass 219.0 ms, peak RSS 301.8 MB" in printed
    rows = printed.splitlines()
    assert rows[rows.index("warm median per graph:") + 1 :][:2] == [
        "  decoder       41.50 ms",
        "  text_encoder  3.25 ms",
    ]
    assert "calls per audio second 1.2" in printed and "RTF 0.091" in printed
    assert not list(out.glob(".pull-*"))  # the pull folder is gone


def test_a_text_bench_pulls_text_json_and_leaves_no_old_audio(tmp_path, monkeypatch, capsys):
    """`chatterbox.text` with VP_TEXT: text.json comes back beside result.json, an audio.wav
    from an earlier run in --out is removed, and the summary reads the text bench's keys."""
    install(tmp_path, monkeypatch)
    result = {**RESULT, "front_end_ms": 1.25, "chunks": 2.0, "ids": 31.0, "runner": "none"}
    monkeypatch.setenv("FAKE_LAUNCH_RESULT", json.dumps(result))
    out = tmp_path / "out"
    out.mkdir()
    (out / "audio.wav").write_bytes(b"an earlier run's")
    env = ("VP_BENCH=chatterbox.text", "VP_BUNDLE=models/cb", "VP_TEXT=Hello there. Hi.")
    assert _bench("chatterbox", *env, extra=("--out", str(out), "--poll", "0.01")) == 0
    printed = capsys.readouterr().out
    assert json.loads((out / "text.json").read_text()) == {"model": "fake", "chunks": []}
    assert not (out / "audio.wav").exists()
    assert "text: 2 chunk(s), 31 ids, front end 1.25 ms per text" in printed
    assert "RTF" not in printed


def test_a_speak_summary_has_the_time_to_first_audio():
    lines = summarize({**RESULT, "first_audio_ms": 420.0, "cold_first_audio_ms": 900.5,
                       "utterance_ms": 2100.0})  # fmt: skip
    assert lines[-1] == "first audio after 420.0 ms (cold 900.5 ms), whole utterance 2100.0 ms"


def test_a_failure_the_app_reports_is_exit_1_with_its_reason(tmp_path, monkeypatch, capsys):
    install(tmp_path, monkeypatch)
    failure = {"format": "voxport-bench-result/1", "error": "VP_BUNDLE models/x: no bundle"}
    monkeypatch.setenv("FAKE_LAUNCH_RESULT", json.dumps(failure))
    out = tmp_path / "out"
    env = ("VP_BENCH=kokoro.speak", "VP_BUNDLE=models/x")
    assert _bench("kokoro", *env, extra=("--out", str(out), "--poll", "0.01")) == 1
    printed = capsys.readouterr().out
    assert "the bench failed on the device: VP_BUNDLE models/x: no bundle" in printed
    assert "RTF" not in printed


def test_a_stale_result_is_not_taken_for_a_new_one(tmp_path, monkeypatch, capsys):
    """A result.json from an earlier run is there; the launch writes none: time out, exit 1."""
    device = install(tmp_path, monkeypatch)
    old = device.container(APP) / "Documents" / "bench" / "kokoro.speak"
    old.mkdir(parents=True)
    (old / "result.json").write_text(json.dumps(RESULT))
    out = tmp_path / "out"
    extra = ("--out", str(out), "--wait", "0.2", "--poll", "0.05")
    assert _bench("kokoro", "VP_BENCH=kokoro.speak", "VP_BUNDLE=m", extra=extra) == 1
    err = capsys.readouterr().err
    assert "no new Documents/bench/kokoro.speak/result.json" in err
    assert not (out / "result.json").exists()


def test_dry_run_prints_the_launch_and_needs_no_xcrun(tmp_path, monkeypatch, capsys):
    no_xcrun(tmp_path, monkeypatch)
    env = ("VP_BENCH=audio8.frame", "VP_BUNDLE=models/a", "VP_OUT=runs/a")
    assert _bench("audio8_tts", *env, extra=["--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    launch = [ln for ln in lines if "device process launch" in ln]
    assert launch == [
        "xcrun devicectl device process launch --device "
        f"{UDID} --environment-variables "
        '\'{"VP_BENCH": "audio8.frame", "VP_BUNDLE": "models/a", "VP_OUT": "runs/a"}\' ' + APP
    ]
    assert sum("--source Documents/runs/a/result.json" in ln for ln in lines) == 2
    assert any("--source Documents/runs/a/audio.wav" in ln for ln in lines)


def test_missing_xcrun_is_one_line_exit_2(tmp_path, monkeypatch, capsys):
    no_xcrun(tmp_path, monkeypatch)
    extra = ["--out", str(tmp_path / "o")]
    assert _bench("kokoro", "VP_BENCH=kokoro.speak", "VP_BUNDLE=m", extra=extra) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "xcrun is not on PATH" in err[0]


def test_core_has_no_device_bench(capsys):
    assert _bench("core", "VP_BENCH=kokoro.speak") == 2
    assert "model 'core' has no device bench" in capsys.readouterr().err


def test_summary_of_a_partial_result_marks_what_is_missing():
    lines = summarize({"device": "Mac16,1", "rtf": None, "load_ms": float("nan")})
    assert lines[0].startswith("bench ? on Mac16,1, ?")
    assert lines[1] == "load nan, first call —, warm pass —, peak RSS —"
    assert lines[-1].endswith("RTF —")


def test_every_swift_bench_of_a_model_is_its_device_bench():
    """The Swift bench catalogue (each `static let name = "model.what"` in VoxportBench) and
    the registry's benches per model name the same benches: a bench added on one side only
    would be refused by `device-bench` or missing from the app."""
    import re
    from pathlib import Path

    from conversion.cli.registry import MODELS

    sources = Path(__file__).resolve().parents[1] / "ios" / "Sources" / "VoxportBench"
    swift = {
        m.group(1)
        for f in sources.glob("*.swift")
        for m in re.finditer(r'static let name = "([a-z0-9_]+\.[a-z0-9_]+)"', f.read_text())
    }
    registered = {b for entry in MODELS.values() for b in entry.benches}
    assert swift - {"core.calls"} == registered  # core.calls: the runtime's own, no model
