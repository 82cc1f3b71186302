"""`voxport gate|speak|bench audio8_tts` end to end on seeded random weights, reduced sizes."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import soundfile as sf

from conversion.cli.main import main
from tests.bundle_reuse import Steps

VOXPORT = os.path.join(os.path.dirname(sys.executable), "voxport")
COMMON = ["--weights", "random", "--config", "reduced"]


def _voxport(*argv):
    return subprocess.run(
        [VOXPORT, *argv], capture_output=True, text=True, timeout=1800, check=False
    )


@pytest.fixture(scope="module")
def gated_bundle(tmp_path_factory):
    """Export the reduced bundle, speak with it, then gate it, all on the same arguments: one
    export, reused by speak, the gate and later tests."""
    tmp = tmp_path_factory.mktemp("audio8")
    bundle, report = tmp / "bundle", tmp / "gate.json"
    steps = Steps(bundle)
    steps.run("export", _voxport("export", "audio8_tts", *COMMON, "--output-dir", str(bundle)))
    steps.run(
        "speak",
        _voxport(
            "speak", "audio8_tts", "Hi.", *COMMON, "--bundle", str(bundle),
            "-o", str(tmp / "hi.wav"),
        ),
    )  # fmt: skip
    proc = steps.run(
        "gate",
        _voxport("gate", "audio8_tts", *COMMON, "--bundle", str(bundle), "--json", str(report)),
    )
    assert report.exists(), proc.stderr[-3000:]
    return bundle, json.loads(report.read_text()), proc, steps


@pytest.mark.slow
def test_export_speak_gate_export_once(gated_bundle):
    steps = gated_bundle[3]
    steps.assert_exported_once()
    assert steps.procs["speak"].returncode == 0, steps.procs["speak"].stderr[-3000:]


@pytest.mark.slow
def test_reduced_gate_passes_every_rung(gated_bundle):
    _, report, proc, _ = gated_bundle
    failed = [r for r in report["rungs"] if not r["passed"]]
    assert report["passed"] and not failed and proc.returncode == 0, (failed, proc.stderr[-3000:])
    names = " ".join(r["name"] for r in report["rungs"])
    for part in (
        "sampler.graph_vs_numpy[20]",
        "sampler.graph_vs_numpy[1000]",
        "ar[fp32].teacher_forced_draws",
        "ar[fp32].free_run",
        "codec.window",
        "codec.stream_vs_whole",
        "precision[slow int8]",
        "precision[fast fp16]",
    ):
        assert part in names


@pytest.mark.slow
@pytest.mark.parametrize("stream", [True, False])
def test_speak_streamed_and_whole(gated_bundle, tmp_path, stream):
    bundle, _, _, _ = gated_bundle
    out = tmp_path / "out.wav"
    flags = ["--stream"] if stream else []
    proc = _voxport(
        "speak", "audio8_tts", "Hello there.", *COMMON, "--bundle", str(bundle), "-o", str(out),
        *flags,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    audio, sr = sf.read(out)
    assert sr == 44_100 and audio.size > 0 and audio.size % 2048 == 0
    assert "time to first audio" in proc.stdout and "clamped" in proc.stdout
    assert not list(tmp_path.glob(".*partial"))


@pytest.mark.slow
def test_speak_with_a_registered_voice(gated_bundle, tmp_path):
    bundle, _, _, _ = gated_bundle
    ref = tmp_path / "ref.wav"
    t = np.arange(int(1.5 * 22_050)) / 22_050
    sf.write(ref, np.stack([0.3 * np.sin(2 * np.pi * 180 * t)] * 2, axis=1), 22_050)
    out = tmp_path / "out.wav"
    proc = _voxport(
        "speak", "audio8_tts", "Hi.", *COMMON, "--bundle", str(bundle), "-o", str(out),
        "--ref", str(ref), "--ref-text", "A steady tone.",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sf.info(out).frames > 0


@pytest.mark.slow
def test_bench_makes_one_call_per_frame(gated_bundle, tmp_path):
    bundle, _, _, _ = gated_bundle
    out = tmp_path / "bench.json"
    proc = _voxport("bench", "audio8_tts", *COMMON, "--bundle", str(bundle), "--json", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    figures = json.loads(out.read_text())
    assert figures["runtime_calls_per_frame"] == 1.0
    for key in ("frame_ms", "prefill_ms_per_window", "codec_window_ms", "time_to_first_audio_s"):
        assert figures[key] > 0, key


def _error(argv, capsys):
    code = main(argv)
    err = [x for x in capsys.readouterr().err.splitlines() if x.startswith("voxport: error:")]
    return code, err


@pytest.mark.parametrize(
    ("seconds", "ref_text", "needle"),
    [
        (0.2, "hi", "0.20 s long"),
        (31.0, "hi", "31.00 s long"),
        (2.0, None, "--ref needs --ref-text"),
    ],
)
def test_bad_reference_fails_before_export(tmp_path, capsys, seconds, ref_text, needle):
    ref = tmp_path / "ref.wav"
    sf.write(ref, 0.1 * np.ones(int(seconds * 16_000), np.float32), 16_000)
    argv = ["speak", "audio8_tts", "Hi.", *COMMON, "--ref", str(ref), "-o", str(tmp_path / "o.wav"),
            "--bundle", str(tmp_path / "never")]  # fmt: skip
    if ref_text:
        argv += ["--ref-text", ref_text]
    code, err = _error(argv, capsys)
    assert code == 2 and err and needle in err[0], err
    assert not (tmp_path / "never").exists()


def test_missing_snapshot_file_is_named(tmp_path, capsys):
    (tmp_path / "config.json").write_text("{}")
    code, err = _error(
        ["export", "audio8_tts", "--weights", str(tmp_path), "--output-dir", str(tmp_path / "b")],
        capsys,
    )
    assert code == 2 and err and "model.safetensors" in err[0], err
