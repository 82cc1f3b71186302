"""`voxport tokenize|voice chatterbox`, and the flags Chatterbox adds to the verbs every port
has (`export`, `gate`, `bench`, `speak`: `conversion/cli/verbs.py`), turned into its options."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from conversion.core.errors import UserError

from .port import PORT

if TYPE_CHECKING:
    from .pipeline import SpeakOptions

# export, gate, bench and speak: every port has them (conversion/cli/verbs.py)
VERBS = ("tokenize", "voice")


def add_arguments(verb: str, parser: argparse.ArgumentParser) -> None:
    if verb == "speak":
        parser.add_argument("--ref", default=None, metavar="WAV", help="reference voice (cloning)")
        parser.add_argument(
            "--exaggeration", type=float, default=0.5, help="emotion exaggeration (0.25-2)"
        )
        parser.add_argument("--cfg", type=float, default=0.5, help="CFG weight (0-3)")
    if verb == "gate":
        parser.add_argument(
            "--fp16-steps",
            choices=("all", "mid"),  # gate.FP16_STEPS (not imported: it loads torch)
            default="all",
            help="Euler steps the fp16 estimator rung checks: all (default) or the middle one "
            "(CI: the Linux runtime emulates fp16, ~80 s per reduced call)",
        )
    if verb == "voice":
        parser.add_argument(
            "--exaggeration",
            type=float,
            default=0.5,
            help="the exaggeration the voice's T3 conditioning is computed at (0-2)",
        )


def speak_options(args: argparse.Namespace, _config) -> SpeakOptions:
    """`voxport speak chatterbox`'s flags as options, checked before any weights load (a
    reference clip is read now; it is cloned once the bundle is open:
    `ChatterboxPort.options_for_pipeline`)."""
    from . import voice as voice_mod
    from .pipeline import SpeakOptions

    voice_mod.check_exaggeration(args.exaggeration)
    if not 0.0 <= args.cfg <= 3.0:
        raise UserError(f"--cfg must be in [0, 3] (the publisher's default is 0.5), got {args.cfg}")
    if args.ref:
        voice_mod.inspect_reference(args.ref)
    return SpeakOptions(
        exaggeration=args.exaggeration, cfg_weight=args.cfg, seed=args.seed, ref=args.ref
    )


@dataclass(frozen=True)
class GateOptions:
    """`voxport gate chatterbox`'s own flag: which Euler steps the fp16 estimator rung checks."""

    fp16_steps: str = "all"


def gate_options(args: argparse.Namespace, _config) -> GateOptions:
    return GateOptions(fp16_steps=getattr(args, "fp16_steps", "all"))


def bench_options(_args: argparse.Namespace, _config) -> None:
    """The bench adds no flags of its own (it runs on the gate's bundles)."""


def tokenize(args: argparse.Namespace) -> int:
    """`voxport tokenize chatterbox TEXT`: the chunks the pipeline would speak (text after the
    publisher's punc_norm, ids with SOT/EOT) as JSON on stdout: a host's `VP_TOKENS`."""
    from conversion.s3gen.text_chunks import print_chunks

    from .text import TextTokenizer

    return print_chunks(PORT, TextTokenizer, args)


def voice(args: argparse.Namespace) -> int:
    """`voxport voice chatterbox --ref WAV -o VOICE.npz`: a voice cloned in eager torch (the
    publisher's encoders) as the npz a device host loads. The reference, the exaggeration and
    the output folder are checked before any model loads; the file is written atomically."""
    from . import voice as voice_mod
    from . import weights

    exaggeration = voice_mod.check_exaggeration(args.exaggeration)
    voice_mod.inspect_reference(args.ref)  # a one-line ReferenceAudioError before compute
    output = Path(args.output)
    if output.suffix != ".npz":
        raise UserError(f"-o {output}: a voice file is an .npz (e.g. voice.npz)")
    folder, config = PORT.resolve(args.weights, args.config, args.weights_seed)
    model = weights.load_model(folder, config)
    print(f"chatterbox: cloning the voice in {args.ref}", file=sys.stderr)
    # the same function the gate's voice[cloned] rung writes its voice file with
    voice_mod.write_voice_file(
        model,
        args.ref,
        output,
        exaggeration=exaggeration,
        prompt_tokens_max=config.prompt_tokens_max,
    )
    print(f"wrote {output}: voice from {Path(args.ref).name} (exaggeration {exaggeration:g})")
    if PORT.is_random(folder):
        print("note: random weights: this voice is noise, not a speaker", file=sys.stderr)
    return 0
