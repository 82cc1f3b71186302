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

from conversion.cli.main import main
from conversion.kokoro.port import PORT
from tests.bundle_reuse import Steps

VOXPORT = os.path.join(os.path.dirname(sys.executable), "voxport")


SPOKEN = "Hello. Thank you."
REDUCED = ["--config", "reduced"]


@pytest.fixture(scope="module")
def gated_bundle(tmp_path_factory):
    """Speak with the reduced bundle at its default folder (exported there first when missing
    or stale), then gate it, on the same arguments: the bundle is exported at most once (the
    gate reuses it), and later tests reuse it too. The default folder is the one
    `tests/kokoro/test_workers.py` and the Swift end-to-end tests use: one export of it serves
    all (when two test workers ask for it at once, one waits on its lock)."""
    tmp = tmp_path_factory.mktemp("kokoro")
    bundle, report = PORT.bundle_path("reduced", "fp32"), tmp / "gate.json"
    steps = Steps(bundle)

    def voxport(*argv):
        return subprocess.run(
            [VOXPORT, *argv], capture_output=True, text=True, timeout=1800, check=False
        )

    steps.run(
        "speak",
        voxport(
            "speak", "kokoro", SPOKEN, "-o", str(tmp / "hello.wav"), *REDUCED,
            "--voice", "jm_kumo", "--timings", str(tmp / "hello.json"),
        ),
    )  # fmt: skip
    proc = steps.run(
        "gate",
        voxport(
            "gate", "kokoro", *REDUCED, "--json", str(report), "--plot", str(tmp / "gate.png"),
        ),
    )  # fmt: skip
    return bundle, json.loads(report.read_text()), proc, steps, tmp


@pytest.mark.slow
def test_speak_and_gate_export_once(gated_bundle):
    gated_bundle[3].assert_exported_once()


@pytest.mark.slow
def test_reduced_real_weight_gate_passes(gated_bundle):
    bundle, report, proc, _, out = gated_bundle
    failed = [r for r in report["rungs"] if not r["passed"]]
    assert report["passed"] and not failed, (failed, proc.stderr[-3000:])
    assert proc.returncode == 0
    names = " ".join(r["name"] for r in report["rungs"])
    for graph in ("predictor", "prosody", "vocoder", "end to end", "bit-identical", "ASR"):
        assert graph in names
    assert (out / "gate.png").stat().st_size > 10_000  # oracle vs bundle plot


# The card's bars (models/kokoro/README.md, "Gate"), written out, not imported from the gate.
CARD_WER_MAX = 0.10
CARD_SPEAKER_COS_MIN = 0.95


@pytest.mark.slow
def test_reduced_gate_has_the_absolute_asr_g2p_and_speaker_rungs(gated_bundle):
    """On the same gate run: KPipeline-phonemised oracle, bundle WER ≤ 0.10 over ≥ 3
    sentences, voxport's phonemes = KPipeline's, and the speaker rung with its scale."""
    _, report, _, _, _ = gated_bundle
    rungs = {r["name"]: r for r in report["rungs"]}
    (g2p,) = [r for n, r in rungs.items() if n.startswith("G2P")]
    (absolute,) = [r for n, r in rungs.items() if n.startswith("ASR") and "oracle" not in n]
    (speaker,) = [r for n, r in rungs.items() if n.startswith("speaker")]
    assert g2p["threshold"] == 1.0 and g2p["passed"], g2p
    assert absolute["threshold"] == CARD_WER_MAX and absolute["passed"], absolute
    n_sentences = int(absolute["name"].split(" over ")[1].split()[0])
    assert n_sentences >= 3
    assert speaker["threshold"] == CARD_SPEAKER_COS_MIN and speaker["passed"], speaker
    # The scale beside it: the oracle's two different voices sit well below the bar.
    scale = float(speaker["detail"].rsplit(":", 1)[1])
    assert scale < CARD_SPEAKER_COS_MIN <= speaker["value"]


@pytest.mark.slow
def test_speak_writes_intelligible_speech(gated_bundle):
    from gates.asr import transcribe, word_error_rate

    bundle, _, _, steps, out = gated_bundle
    proc = steps.procs["speak"]
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "real-time factor" in proc.stdout
    audio, sr = sf.read(out / "hello.wav", dtype="float32")
    assert sr == 24000 and audio.size > 24000 * 0.5
    assert np.abs(audio).max() > 0.05
    assert word_error_rate("hello thank you", transcribe(audio, sr)) <= 0.34


@pytest.mark.slow
def test_speak_writes_word_timings_inside_their_chunks(gated_bundle):
    """`--timings`: every word of both sentences, in order, inside the audio, and the second
    sentence's words after the first sentence's audio and the pause (0.2 s of silence)."""
    out = gated_bundle[4]
    audio, sr = sf.read(out / "hello.wav", dtype="float32")
    words = json.loads((out / "hello.json").read_text())["words"]
    assert [w["text"] for w in words] == ["Hello", ".", "Thank", "you", "."]
    starts, ends = [w["start"] for w in words], [w["end"] for w in words]
    assert all(s <= e for s, e in zip(starts, ends, strict=True))
    assert starts == sorted(starts) and ends[-1] <= audio.size / sr
    # The pause the join leaves (0.2 s of exact zeros) lies between "." and "Thank".
    gap = audio[int(ends[1] * sr) : int(starts[2] * sr) + 1] == 0
    longest = run = 0
    for silent in gap:
        run = run + 1 if silent else 0
        longest = max(longest, run)
    assert longest >= int(0.2 * sr)


def test_timings_from_a_model_that_does_not_time_words_is_refused(tmp_path, capsys):
    argv = [
        "speak",
        "chatterbox",
        "Hi.",
        "-o",
        str(tmp_path / "x.wav"),
        "--timings",
        str(tmp_path / "t.json"),
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "voxport: error: chatterbox does not time its words: leave out --timings (kokoro does)"
    ]
    assert list(tmp_path.iterdir()) == []


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


@pytest.mark.slow
def test_memory_stays_flat_over_50_sentences(gated_bundle):
    """RSS growth ≤ 50 MB over 50 sentences through the graphs and host steps.

    The predictor and the harmonic source run for every sentence; the whole pipeline (prosody
    and the vocoder, ~19 s a call at L64 on this runtime) for every tenth — the same Session
    call path either way.
    """
    import psutil

    from conversion.kokoro import host
    from conversion.kokoro.pipeline import KokoroPipeline

    bundle, _, _, _, _ = gated_bundle
    proc = psutil.Process()
    pack = host.load_voice("jf_alpha")
    chunk = host.text_to_chunks("Hello.")[0]
    ref_s = host.ref_s_for(pack, chunk.n_phonemes)
    with KokoroPipeline(bundle) as pipeline:
        pipeline.synthesize_ids(chunk.ids, ref_s)  # warm: lowering, first allocations
        start = proc.memory_info().rss
        for i in range(50):
            if i % 10 == 9:
                pipeline.synthesize_ids(chunk.ids, ref_s, seed=i)
                continue
            pred = pipeline.predictor(chunk.ids, ref_s)
            pred_dur = host.pred_durations(pred["duration"])
            host.harmonic_source(
                np.zeros((1, 2 * int(pred_dur.sum())), np.float32),
                pipeline.source_weight,
                pipeline.source_bias,
                **{
                    k: v
                    for k, v in host.draw_source_noise(2 * int(pred_dur.sum()), i).items()
                    if k != "source_noise"
                },
            )
        growth_mb = (proc.memory_info().rss - start) / 2**20
    assert growth_mb <= 50, f"RSS grew {growth_mb:.1f} MB over 50 sentences"
