"""`voxport gate|speak|bench chatterbox` end to end on seeded random weights, reduced sizes.

The gate compares every graph, run through the Core AI runtime, with the publisher's own
ChatterboxTTS on the same weights; the speak tests check the CLI's cloning path and its bad
input handling (each error comes before any export).
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import soundfile as sf

from conversion.chatterbox import weights
from conversion.cli.main import main
from conversion.core.bundle import load_manifest
from tests.bundle_reuse import Steps

VOXPORT = os.path.join(os.path.dirname(sys.executable), "voxport")
COMMON = ["--weights", "random", "--config", "reduced"]
REF_SECONDS = 3.0  # > the reduced sizes' S3Gen prompt cap (40 tokens, 1.6 s)


def _voxport(*argv, timeout=1800):
    return subprocess.run(
        [VOXPORT, *argv], capture_output=True, text=True, timeout=timeout, check=False
    )


OTHER_WEIGHTS_SEED = 7  # CI's second weights seed (the card's sweep runs more)


def _in_checkout(checkout, *argv):
    return subprocess.Popen(
        [VOXPORT, *argv], cwd=checkout, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    """One checkout (a working folder with its own bundles/) where two gates at different
    weights seeds run at once on their default bundle folders, as two people or a sweep beside
    a developer would: the seed-7 gate (whole ladder) starts first and runs while the seed-0
    export, speak and gate below run; each must give the verdict it gives alone."""
    root = tmp_path_factory.mktemp("checkout")
    report = root / "gate-seed7.json"
    other = _in_checkout(
        root, "gate", "chatterbox", *COMMON, "--weights-seed", str(OTHER_WEIGHTS_SEED),
        "--fp16-steps", "mid", "--json", str(report),
    )  # fmt: skip
    yield root, other, report
    if other.poll() is None:
        other.kill()
    other.communicate()


@pytest.fixture(scope="module")
def gated_bundle(checkout):
    """Export the reduced fp32 bundle, speak with it (cloning a stereo 16 kHz reference longer
    than the reduced prompt cap, so its prompt is cut and prompt + the full T3 budget must fit
    the largest encoder bucket), then gate it (the fp16 estimator rung on its middle Euler step:
    fp16 is emulated slowly here), all on the same arguments and the default bundle folder (its
    weights seed's), while the other weights seed's gate runs in the same checkout: one export,
    reused by speak, the gate and later tests."""
    tmp = checkout[0]
    bundle, report, md = (
        tmp / "bundles" / "chatterbox-fp32-reduced-seed0",
        tmp / "gate.json",
        tmp / "gate.md",
    )
    steps = Steps(bundle)

    def run(*argv):
        proc = _in_checkout(tmp, *argv)
        out, err = proc.communicate(timeout=1800)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    steps.run("export", run("export", "chatterbox", *COMMON))
    ref = tmp / "ref.wav"
    mono = weights.synthetic_reference(REF_SECONDS, seed=3, sample_rate=16_000)
    sf.write(ref, np.stack([mono, 0.5 * mono], axis=1), 16_000)  # stereo, 16 kHz
    steps.run(
        "speak",
        run(
            "speak", "chatterbox", "Hi there.", *COMMON, "-o", str(tmp / "out.wav"),
            "--ref", str(ref), "--exaggeration", "0.7", "--cfg", "0.4", "--seed", "5",
        ),
    )  # fmt: skip
    proc = steps.run(
        "gate",
        run(
            "gate", "chatterbox", *COMMON, "--json", str(report), "--markdown", str(md),
            "--fp16-steps", "mid",
        ),
    )  # fmt: skip
    assert report.exists(), proc.stderr[-3000:]
    return bundle, json.loads(report.read_text()), md.read_text(), proc, steps, ref


@pytest.mark.slow
def test_export_speak_gate_export_once(gated_bundle):
    gated_bundle[4].assert_exported_once()


@pytest.mark.slow
def test_reduced_gate_passes_every_rung(gated_bundle):
    _, report, md, proc, _, _ = gated_bundle
    failed = [r for r in report["rungs"] if not r["passed"]]
    assert report["passed"] and not failed, (failed, proc.stderr[-3000:])
    assert proc.returncode == 0
    names = " ".join(r["name"] for r in report["rungs"])
    for part in (
        "text.ids",
        "t3[fp32].logits",
        "t3[int8].logits",
        "t3[int8].draws",
        "flow_encoder.mu",
        "flow_estimator.velocity",
        "flow_estimator[fp16@step5].velocity",
        "hift.wav",
        "e2e[default].t3_logits",
        "e2e[default].mel",
        "voice[cloned].conds",
        "e2e[cloned].t3_logits",
        "e2e[cloned].mel",
        "e2e[cloned].wav",
        "t3[fp32].free_run",
    ):
        assert part in names
    by_name = {r["name"]: r for r in report["rungs"]}
    assert "12/12 texts: same pieces" in by_name["text.ids"]["detail"]  # 8 short + 4 long
    assert "read from disk" in by_name["voice[cloned].conds"]["detail"]
    # the step-count table: every row the bundle's own run against the publisher's 10 steps
    head = "| Euler steps | mel cos vs the publisher's 10 steps |"
    assert head in md
    rows = dict(
        (int(a), float(b))
        for a, b in (
            line.strip("|").split("|") for line in md.split(head)[1].splitlines()[2:] if line
        )
    )
    assert sorted(rows) == [4, 6, 8, 10]
    assert rows[10] >= 0.999 and max(rows[4], rows[6], rows[8]) < rows[10]


@pytest.mark.slow
def test_speak_clones_a_stereo_16k_reference(gated_bundle):
    bundle, _, _, _, steps, _ = gated_bundle
    proc = steps.procs["speak"]
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "cloning the voice" in proc.stderr
    audio, sr = sf.read(gated_bundle[5].parent / "out.wav")
    assert sr == 24_000 and audio.size > 0.5 * sr and np.abs(audio).max() > 0
    assert "noise" in proc.stderr  # random weights say so


@pytest.mark.slow
def test_speak_with_the_clone_is_not_the_default_voice(gated_bundle, tmp_path):
    """The clone has an effect: the same speak with the same seed and options but the
    bundle's default voice (no --ref) gives other audio (speak draws everything from the seed:
    ChunkDraws.from_seed; the gate's free-run rung shows the bundle replays given draws)."""
    bundle, _, _, _, steps, _ = gated_bundle
    assert steps.procs["speak"].returncode == 0, steps.procs["speak"].stderr[-3000:]
    out = tmp_path / "default.wav"
    proc = _voxport(
        "speak", "chatterbox", "Hi there.", *COMMON, "--bundle", str(bundle), "-o", str(out),
        "--exaggeration", "0.7", "--cfg", "0.4", "--seed", "5",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "cloning the voice" not in proc.stderr
    cloned, _ = sf.read(gated_bundle[5].parent / "out.wav", dtype="float32")
    default, _ = sf.read(out, dtype="float32")
    n = min(cloned.size, default.size)
    assert cloned.size != default.size or not np.allclose(cloned[:n], default[:n], atol=1e-3)


@pytest.mark.slow
def test_long_text_is_split_not_truncated(gated_bundle, tmp_path):
    from conversion.chatterbox.pipeline import ChatterboxPipeline

    bundle, _, _, _, _, _ = gated_bundle
    text = " ".join(["The quick brown fox jumps over the lazy dog, again and again."] * 4)
    with ChatterboxPipeline(bundle) as pipeline:
        chunks = pipeline.chunks(text)
        budget = pipeline.config.text_budget
    assert len(chunks) >= 4 and all(c.ids.size <= budget for c in chunks)
    words = [w for c in chunks for w in c.text.split()]
    assert len(words) == len(text.split())  # every word is said once


@pytest.mark.slow
def test_bench_reports_every_stage(gated_bundle, tmp_path):
    bundle, _, _, _, _, _ = gated_bundle
    out = tmp_path / "bench.json"
    proc = _voxport("bench", "chatterbox", *COMMON, "--bundle", str(bundle), "--json", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    figures = json.loads(out.read_text())
    for key in (
        "t3_decode_ms_per_token_fp32",
        "t3_decode_ms_per_token_int8",
        "estimator_ms_per_call",
        "vocoder_ms",
        "runtime_calls_per_audio_s",
        "coreai_bundle_rtf",
        "eager_estimator_ms_per_call",
        "eager_t3_decode_ms_per_step",
        "t3_decode_vs_eager_step",
        "peak_rss_mb",
    ):
        assert figures[key] is not None and figures[key] > 0, key
    # Like for like: one eager decode step is a small part of the whole loop's time per token.
    assert figures["eager_t3_decode_ms_per_step"] < figures["eager_t3_loop_ms_per_token"]
    ratio = figures["t3_decode_ms_per_token_fp32"] / figures["eager_t3_decode_ms_per_step"]
    assert abs(figures["t3_decode_vs_eager_step"] - ratio) <= 0.01 * ratio + 0.01


def _one_line_error(argv, capsys):
    code = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    return code, [line for line in err if line.startswith("voxport: error:")]


def test_missing_checkpoint_file_is_named(tmp_path, capsys):
    w = tmp_path / "w"  # the output beside the weights folder: inside it is refused (issue 29)
    w.mkdir()
    for name in ("ve.safetensors", "t3_cfg.safetensors", "tokenizer.json"):
        (w / name).write_bytes(b"")
    code, err = _one_line_error(
        ["speak", "chatterbox", "Hi.", "--weights", str(w), "-o", str(tmp_path / "o.wav")],
        capsys,
    )
    assert code == 2 and err and "s3gen.safetensors is missing" in err[0]


def test_reduced_snapshot_refuses_published_config(capsys, tmp_path):
    from conversion.chatterbox.config import REDUCED
    from conversion.chatterbox.port import PORT

    folder = PORT.resolve_weights("random", REDUCED, 0)
    code, err = _one_line_error(
        ["export", "chatterbox", "--weights", str(folder), "--config", "published",
         "--output-dir", str(tmp_path / "b")],
        capsys,
    )  # fmt: skip
    assert code == 2 and err and "reduced configuration" in err[0]
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize(
    ("make_ref", "needle"),
    [
        (lambda p: sf.write(p, np.zeros(0, np.float32), 24_000), "no samples"),
        (lambda p: sf.write(p, 0.1 * np.ones(4_000, np.float32), 24_000), "cloning needs at least"),
        (lambda p: p.write_bytes(b"not a wav file at all"), "could not be read as audio"),
    ],
)
def test_bad_reference_fails_before_export(tmp_path, capsys, make_ref, needle):
    ref = tmp_path / "ref.wav"
    make_ref(ref)
    code, err = _one_line_error(
        ["speak", "chatterbox", "Hi.", *COMMON, "--ref", str(ref), "-o", str(tmp_path / "o.wav"),
         "--bundle", str(tmp_path / "never")],
        capsys,
    )  # fmt: skip
    assert code == 2 and err and needle in err[0], err
    assert not (tmp_path / "never").exists() and not (tmp_path / "o.wav").exists()


def test_truncated_checkpoint_is_named(tmp_path):
    from conversion.chatterbox.config import REDUCED
    from conversion.chatterbox.port import PORT
    from conversion.core.errors import WeightsError

    folder = PORT.resolve_weights("random", REDUCED, 0)
    for name in ("ve.safetensors", "s3gen.safetensors", "tokenizer.json", "voxport-config.json"):
        (tmp_path / name).symlink_to(folder / name)
    (tmp_path / "t3_cfg.safetensors").write_bytes(
        (folder / "t3_cfg.safetensors").read_bytes()[:4096]
    )
    with pytest.raises(WeightsError, match=r"t3_cfg\.safetensors cannot be read"):
        weights.load_model(tmp_path)


@pytest.mark.slow
def test_memory_stays_flat_over_50_utterances(gated_bundle):
    """RSS of this process and its runtime child together grows <= 50 MB over 50 utterances
    (the runtime keeps every output buffer; the isolated child is recycled between them).
    T3 — the call that leaks most, 64 KB of logits a token — runs for every utterance, the
    whole pipeline (flow encoder, estimator, HiFT) for every tenth: the same call paths."""
    import psutil

    from conversion.chatterbox.pipeline import ChatterboxPipeline, ChunkDraws, SpeakOptions

    me = psutil.Process()

    def total_rss() -> int:
        return me.memory_info().rss + sum(c.memory_info().rss for c in me.children(True))

    options = SpeakOptions(max_new_tokens=8, n_steps=2)
    with ChatterboxPipeline(gated_bundle[0], isolate=True) as pipeline:
        chunk, voice = pipeline.chunks("Hi there.")[0], pipeline.default_voice
        pipeline.synthesize(chunk, voice, options)  # warm: lowering, first allocations
        start = total_rss()
        for i in range(50):
            if i % 10 == 9:
                result = pipeline.synthesize(chunk, voice, options, seed=i)
                assert result.calls.get("t3", 0) >= 1
                continue
            pipeline.between_utterances()
            t3 = pipeline.t3(chunk.ids, voice, options, ChunkDraws.from_seed(i, 0).uniforms)
            assert 1 <= len(t3.tokens) <= 8
        growth_mb = (total_rss() - start) / 2**20
    print(f"chatterbox RSS growth over 50 utterances: {growth_mb:.1f} MB")
    assert growth_mb <= 50, f"RSS grew {growth_mb:.1f} MB over 50 utterances"


@pytest.mark.slow
def test_two_gates_at_two_weights_seeds_in_one_checkout_each_pass_alone(checkout, gated_bundle):
    """CI's second weights seed, gated (the whole ladder, the fp16 estimator on its middle step
    as CI's first) while the seed-0 export, speak and gate ran in the same checkout: each seed
    exports its own default folders and neither replaces the other's, so both ladders pass as
    they do alone (before, the second writer re-exported the first's folder under its gate:
    every fp32 rung failed at cosine -0.014)."""
    root, other, report = checkout
    out, err = other.communicate(timeout=1800)
    assert report.exists(), err[-3000:]
    doc = json.loads(report.read_text())
    failed = [r["name"] for r in doc["rungs"] if not r["passed"]]
    assert other.returncode == 0 and doc["passed"], (failed, err[-3000:])
    names = {r["name"] for r in doc["rungs"]}
    assert {"text.ids", "voice[cloned].conds", "t3[int8].logits"} <= names, sorted(names)
    assert "re-exporting" not in err and "re-exporting" not in gated_bundle[3].stderr
    seed7 = f"chatterbox-fp32-reduced-seed{OTHER_WEIGHTS_SEED}"
    folders = sorted(p.name for p in (root / "bundles").iterdir() if not p.name.startswith("."))
    assert {"chatterbox-fp32-reduced-seed0", seed7, f"{seed7}-gate-est-fp16"} <= set(folders)
    assert (
        load_manifest(root / "bundles" / seed7).weights_sha256
        != load_manifest(gated_bundle[0]).weights_sha256
    )
