"""`voxport tokenize|voice chatterbox_turbo`, and the flags Turbo adds to the verbs every port
has (`export`, `gate`, `bench`, `speak`: `conversion/cli/verbs.py`), turned into its options."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from conversion.core.errors import UserError

from .port import PORT

if TYPE_CHECKING:
    from .pipeline import SpeakOptions

VERBS = ("tokenize", "voice")


def add_arguments(verb: str, parser: argparse.ArgumentParser) -> None:
    if verb == "speak":
        parser.add_argument("--ref", default=None, metavar="WAV", help="reference voice (> 5 s)")
        parser.add_argument("--temperature", type=float, default=0.8, help="T3 temperature")
        parser.add_argument("--top-k", type=int, default=1000, help="T3 top-k (0: off)")
        parser.add_argument("--top-p", type=float, default=0.95, help="T3 top-p (1: off)")
        parser.add_argument(
            "--repetition-penalty", type=float, default=1.2, help="T3 repetition penalty"
        )


def speak_options(args: argparse.Namespace, config) -> SpeakOptions:
    """`voxport speak chatterbox_turbo`'s flags as options, checked before any weights load
    (a reference clip is read now; it is cloned once the bundle is open)."""
    from .pipeline import SpeakOptions
    from .voice import inspect_reference

    if not args.temperature > 0:
        raise UserError(
            f"--temperature must be > 0 (the publisher's is 0.8), got {args.temperature}"
        )
    if args.top_k < 0:
        raise UserError(
            f"--top-k must be >= 0 (0 turns it off; the publisher's is 1000), got {args.top_k}"
        )
    if not 0 < args.top_p <= 1:
        raise UserError(f"--top-p must be in (0, 1] (the publisher's is 0.95), got {args.top_p}")
    if not args.repetition_penalty > 0:
        raise UserError(
            f"--repetition-penalty must be > 0 (the publisher's is 1.2), got "
            f"{args.repetition_penalty}"
        )
    if args.ref:
        inspect_reference(args.ref, config)
    return SpeakOptions(
        temperature=args.temperature,
        top_k=args.top_k,
        top_p=args.top_p,
        repetition_penalty=args.repetition_penalty,
        seed=args.seed,
        ref=args.ref,
    )


def gate_options(_args: argparse.Namespace, _config) -> None:
    """The gate adds no flags of its own."""


def bench_options(_args: argparse.Namespace, _config) -> None:
    """The bench adds no flags of its own (it runs on the gate's bundles)."""


def tokenize(args: argparse.Namespace) -> int:
    """`voxport tokenize chatterbox_turbo TEXT`: the chunks the pipeline would speak (text
    after the publisher's Turbo punc_norm, GPT-2 ids) as JSON on stdout."""
    from conversion.s3gen.text_chunks import print_chunks

    from .text import TurboTextTokenizer

    return print_chunks(PORT, TurboTextTokenizer, args)


def voice(args: argparse.Namespace) -> int:
    """`voxport voice chatterbox_turbo --ref WAV -o VOICE.npz`: a voice cloned in eager torch
    (the publisher's `prepare_conditionals`) as the npz a host loads. The reference and the
    output are checked before any model loads; the file is written atomically."""
    from . import weights
    from .voice import inspect_reference, write_voice_file

    output = Path(args.output)
    if output.suffix != ".npz":
        raise UserError(f"-o {output}: a voice file is an .npz (e.g. voice.npz)")
    config = PORT.config(args.config)
    inspect_reference(args.ref, config)  # a one-line ReferenceAudioError before compute
    folder, config = PORT.resolve(args.weights, args.config, args.weights_seed)
    model = weights.load_model(folder)
    print(f"chatterbox_turbo: cloning the voice in {args.ref}", file=sys.stderr)
    write_voice_file(model, args.ref, output, config)
    print(f"wrote {output}: voice from {Path(args.ref).name}")
    if PORT.is_random(folder):
        print("note: random weights: this voice is noise, not a speaker", file=sys.stderr)
    return 0
