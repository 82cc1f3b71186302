"""`voxport export|gate|speak|bench audio8_tts`."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from conversion.core.bundle import load_manifest
from conversion.core.errors import BundleIntegrityError, BundleNotFoundError, UserError
from conversion.core.progress import console, progress_steps

from . import snapshot
from .config import by_name
from .export import export_bundle, graph_precisions

FRAME_REPORT_EVERY = 50  # frames (2.3 s of audio)


def _config(args: argparse.Namespace):
    return by_name(args.config)


def resolve_weights(args: argparse.Namespace) -> Path:
    return snapshot.resolve(args.weights, _config(args), args.seed)


def default_bundle(args: argparse.Namespace, dtype: str | None = None) -> Path:
    suffix = "-reduced" if args.config == "reduced" else ""
    return Path("bundles") / f"audio8_tts-{dtype or getattr(args, 'dtype', 'fp32')}{suffix}"


def ensure_bundle(args, folder: Path, dtype: str | None = None, loaded=None) -> Path:
    """The bundle for these weights and dtype: reused when its manifest matches."""
    dtype = dtype or getattr(args, "dtype", "fp32")
    path = Path(args.bundle) if getattr(args, "bundle", None) else default_bundle(args, dtype)
    sha = snapshot.snapshot_sha256(folder)
    try:
        m = load_manifest(path)
        if (
            m.weights_sha256 == sha
            and m.config.get("graphs") == graph_precisions(dtype)
            and m.config.get("config", {}).get("name") == args.config
        ):
            return path
        print(f"audio8_tts: {path} is from other weights/dtype: re-exporting", file=sys.stderr)
    except (BundleNotFoundError, BundleIntegrityError):
        pass
    loaded = loaded or snapshot.load(folder, _config(args))
    export_bundle(loaded, path, dtype, overwrite=True, weights_sha256=sha)
    return path


def export(args: argparse.Namespace) -> int:
    folder = resolve_weights(args)
    start = time.perf_counter()
    loaded = snapshot.load(folder, _config(args))
    export_bundle(
        loaded,
        args.output_dir,
        args.dtype,
        overwrite=args.overwrite,
        weights_sha256=snapshot.snapshot_sha256(folder),
    )
    print(f"wrote {args.output_dir} ({time.perf_counter() - start:.0f} s)")
    return 0


def speak(args: argparse.Namespace) -> int:
    import soundfile as sf

    from conversion.core.paths import writable_file

    from .pipeline import Audio8Bundle
    from .voice import load_reference, register

    if not args.text or not args.text.strip():
        raise UserError("audio8_tts: the text to speak is empty")
    target = writable_file(args.output)
    config = _config(args)
    if args.ref:
        if not getattr(args, "ref_text", None):
            raise UserError(
                "audio8_tts: --ref needs --ref-text (the clip's transcript; the publisher's "
                "prompt carries it)"
            )
        load_reference(args.ref, config.codec_sample_rate)  # a bad clip fails before export
    folder = resolve_weights(args)
    bundle = ensure_bundle(args, folder)
    tmp = target.with_name(f".{target.name}.partial")
    with Audio8Bundle(bundle) as ab:
        voice = register(ab.session, args.ref, args.ref_text, ab.codec_config) if args.ref else None
        rate = ab.codec_config.sample_rate
        with sf.SoundFile(
            tmp, "w", samplerate=rate, channels=1, subtype="PCM_16", format="WAV"
        ) as f:

            def write(chunk):
                f.write(chunk.clip(-1, 1))
                f.flush()
                if args.stream:
                    console.print(f"  audio: +{chunk.size / rate:.2f} s written")

            def frames(done, budget):
                if done % FRAME_REPORT_EVERY == 0:
                    console.print(f"  frames: {done} (budget {budget})")

            with progress_steps(1, "speak audio8_tts") as bar:
                result = ab.speak(
                    args.text,
                    voice,
                    seed=args.seed,
                    stream=args.stream,
                    on_audio=write,
                    on_frame=frames,
                )
                bar.step(f"{len(result.pieces)} piece(s)")
    tmp.replace(target)
    dur = result.audio.size / rate
    clamped = sum(p.decode.clamped for p in result.pieces)
    print(
        f"wrote {target}: {dur:.2f} s of audio in {result.seconds:.1f} s (real-time factor "
        f"{result.seconds / max(dur, 1e-9):.2f}); time to first audio "
        f"{result.first_audio_s:.2f} s ({'streamed' if args.stream else 'whole utterance'}); "
        f"{sum(p.frames.codes.shape[1] for p in result.pieces)} frames, {clamped} codec "
        "draw(s) clamped"
    )
    if snapshot.is_random(folder):
        print("note: random weights: this audio is noise, not speech", file=sys.stderr)
    return 0


def gate(args: argparse.Namespace) -> int:
    folder = resolve_weights(args)
    from .gate import run_gate

    return run_gate(args, folder)


def bench(args: argparse.Namespace) -> int:
    folder = resolve_weights(args)
    from .bench import run_bench

    return run_bench(args, folder)


__all__ = ["bench", "export", "gate", "speak"]
