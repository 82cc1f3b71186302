"""`voxport export|gate|speak|bench chatterbox`."""

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
from .export import export_bundle


def _config(args: argparse.Namespace):
    return by_name(args.config)


def resolve_weights(args: argparse.Namespace) -> Path:
    return snapshot.resolve(args.weights, _config(args), args.seed)


def default_bundle(args: argparse.Namespace, dtype: str | None = None) -> Path:
    suffix = "-reduced" if args.config == "reduced" else ""
    return Path("bundles") / f"chatterbox-{dtype or getattr(args, 'dtype', 'fp32')}{suffix}"


def ensure_bundle(
    args: argparse.Namespace,
    folder: Path,
    dtype: str | None = None,
    path: Path | None = None,
    graphs=None,
    precisions: dict[str, str] | None = None,
    model=None,
    config=None,
) -> Path:
    """The bundle for these weights, config and dtype: reused when its manifest matches.

    `config` overrides --config's sizes (the gate's bucket subset)."""
    from .export import GRAPHS, graph_precisions

    dtype = dtype or getattr(args, "dtype", "fp32")
    if path is None:
        path = Path(args.bundle) if getattr(args, "bundle", None) else default_bundle(args, dtype)
    config = config or _config(args)
    sha = snapshot.snapshot_sha256(folder)
    graphs = tuple(graphs or GRAPHS)
    want = {
        g: p for g, p in {**graph_precisions(dtype), **(precisions or {})}.items() if g in graphs
    }
    try:
        m = load_manifest(path)
        if (
            m.weights_sha256 == sha
            and m.config.get("config") == config.to_json()
            and m.config.get("graphs") == want
        ):
            return path
        print(
            f"chatterbox: {path} is from other weights/config/dtype: re-exporting", file=sys.stderr
        )
    except (BundleNotFoundError, BundleIntegrityError):
        pass
    from . import weights

    model = model or weights.load_model(folder, _config(args))
    export_bundle(
        model,
        config,
        path,
        dtype,
        overwrite=True,
        weights_sha256=sha,
        snapshot=folder,
        graphs=graphs,
        precisions=precisions,
    )
    return path


def export(args: argparse.Namespace) -> int:
    from . import weights

    folder = resolve_weights(args)
    start = time.perf_counter()
    config = _config(args)
    model = weights.load_model(folder, config)
    export_bundle(
        model,
        config,
        args.output_dir,
        args.dtype,
        overwrite=args.overwrite,
        weights_sha256=snapshot.snapshot_sha256(folder),
        snapshot=folder,
    )
    print(f"wrote {args.output_dir} ({time.perf_counter() - start:.0f} s)")
    return 0


def _voice(args: argparse.Namespace, folder: Path, default):
    """The voice to speak with: cloned from --ref (publisher's encoders, eager), or the default."""
    from . import voice as voice_mod
    from . import weights

    if not getattr(args, "ref", None):
        if default is None:
            raise UserError(
                "chatterbox: the snapshot has no default voice (conds.pt); pass --ref voice.wav"
            )
        return default
    model = weights.load_model(folder, _config(args))
    print(f"chatterbox: cloning the voice in {args.ref}", file=sys.stderr)
    return voice_mod.clone_voice(model, args.ref, exaggeration=args.exaggeration)


TOKEN_REPORT_EVERY = 50  # two seconds of speech; a published-size token takes ~3 s here


def _token_progress(done: int, budget: int) -> None:
    if done % TOKEN_REPORT_EVERY == 0:
        console.print(f"  T3: {done} tokens drawn (budget {budget})")


def speak(args: argparse.Namespace) -> int:
    from conversion.core.audio_io import write_wav

    from . import voice as voice_mod
    from .config import SAMPLE_RATE
    from .pipeline import ChatterboxBundle, SpeakOptions, seconds_of

    voice_mod.check_exaggeration(args.exaggeration)
    if not 0.0 <= args.cfg <= 3.0:
        raise UserError(f"--cfg must be in [0, 3] (the publisher's default is 0.5), got {args.cfg}")
    if getattr(args, "ref", None):
        voice_mod.inspect_reference(args.ref)
    folder = resolve_weights(args)
    bundle = ensure_bundle(args, folder)
    options = SpeakOptions(exaggeration=args.exaggeration, cfg_weight=args.cfg)
    with ChatterboxBundle(bundle) as cb:
        chunks = cb.chunks(args.text)
        voice = _voice(args, folder, cb.default_voice)
        start = time.perf_counter()
        with progress_steps(len(chunks), "speak chatterbox") as bar:
            audio, results = cb.speak(
                args.text,
                voice=voice,
                options=options,
                seed=args.seed,
                chunks=chunks,
                on_chunk=lambda i, n, r: bar.step(f"{r.text[:32]} ({r.speech_tokens.size} tok)"),
                on_token=_token_progress,
            )
    seconds = time.perf_counter() - start
    write_wav(args.output, audio, SAMPLE_RATE)
    dur = seconds_of(audio)
    stopped = sum(r.t3.stopped for r in results)
    print(
        f"wrote {args.output}: {dur:.2f} s of audio in {seconds:.1f} s "
        f"(real-time factor {seconds / max(dur, 1e-9):.2f}, {len(results)} chunk(s), "
        f"{stopped} stopped on the stop token)"
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
