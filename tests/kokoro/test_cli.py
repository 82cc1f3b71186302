"""`voxport gate|speak kokoro` end to end with the real weights, at the reduced buckets.

This is CI's real-weight ladder: a regression in any graph or host step fails the build.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import soundfile as sf

from conversion.core.cli import main

VOXPORT = os.path.join(os.path.dirname(sys.executable), "voxport")


@pytest.fixture(scope="module")
def gated_bundle(tmp_path_factory):
    """Run the reduced real-weight gate once; its bundle is reused by the speak test."""
    tmp = tmp_path_factory.mktemp("kokoro")
    bundle, report = tmp / "bundle", tmp / "gate.json"
    proc = subprocess.run(
        [
            VOXPORT,
            "gate",
            "kokoro",
            "--config",
            "reduced",
            "--bundle",
            str(bundle),
            "--json",
            str(report),
        ],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    return bundle, json.loads(report.read_text()), proc


def test_reduced_real_weight_gate_passes(gated_bundle):
    _, report, proc = gated_bundle
    failed = [r for r in report["rungs"] if not r["passed"]]
    assert report["passed"] and not failed, (failed, proc.stderr[-3000:])
    assert proc.returncode == 0
    names = " ".join(r["name"] for r in report["rungs"])
    for graph in ("predictor", "prosody", "vocoder", "end to end", "bit-identical", "ASR"):
        assert graph in names


def test_speak_writes_intelligible_speech(gated_bundle, tmp_path):
    from gates.asr import transcribe, word_error_rate

    bundle, _, _ = gated_bundle
    out = tmp_path / "hello.wav"
    proc = subprocess.run(
        [
            VOXPORT,
            "speak",
            "kokoro",
            "Hello. Thank you.",
            "-o",
            str(out),
            "--config",
            "reduced",
            "--bundle",
            str(bundle),
            "--voice",
            "jm_kumo",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "real-time factor" in proc.stdout
    audio, sr = sf.read(out, dtype="float32")
    assert sr == 24000 and audio.size > 24000 * 0.5
    assert np.abs(audio).max() > 0.05
    assert word_error_rate("hello thank you", transcribe(audio, sr)) <= 0.34


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["speak", "kokoro", "   ", "-o", "/tmp/x.wav"], "TEXT is empty"),
        (["speak", "kokoro", "... !! ;", "-o", "/tmp/x.wav"], "nothing to say"),
        (["speak", "kokoro", "Hello.", "-o", "/tmp/x.wav", "--voice", "af_nope"], "jf_alpha"),
    ],
)
def test_bad_input_is_one_line_exit_2(argv, needle, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith("voxport: error:") and needle in err[0]
