"""`voxport gate|speak|bench|tokenize|voice chatterbox`: the flags Chatterbox adds, speak's as
options, and each other verb's arguments turned into explicit calls on the port, the gate and the
bench (`export` and `speak` are every port's, `conversion/cli/verbs.py`)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from conversion.core.errors import UserError
from conversion.core.port import BundleSource

from .port import PORT

if TYPE_CHECKING:
    from .pipeline import SpeakOptions

# export and speak: every port has them (conversion/cli/verbs.py)
VERBS = ("gate", "bench", "tokenize", "voice")


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


def _source(args: argparse.Namespace, folder: Path, loaded=None) -> BundleSource:
    return BundleSource(
        PORT, folder, args.config, path=args.bundle, loaded=loaded, overwrite=args.overwrite
    )


def _check_gate_bundles(args: argparse.Namespace, folder: Path, config) -> None:
    """The gate's bundles (fp32 at the gate's sizes and its int8-T3 sibling: `gate_bundles`),
    each refused now when it is a `--bundle` made from other arguments (no `--overwrite`):
    before the model loads and the oracle runs, not minutes later."""
    from .gate.ladder import gate_config

    sizes = gate_config(config)
    variant = None if sizes == config else "gate"
    source = _source(args, folder)
    source.check(sizes, "fp32", variant=variant)
    source.check(sizes, "int8", graphs=("t3",), variant=f"{variant or 'gate'}-t3")


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


def gate(args: argparse.Namespace) -> int:
    from . import weights
    from .gate import run_gate

    if args.plot:  # refused, never silently ignored
        raise UserError(
            "--plot: the chatterbox gate draws no plot yet (kokoro's does); drop --plot"
        )
    if getattr(args, "mutants", None) is not None:
        from gates.mutants import select

        from .mutants import CATALOGUE

        select(CATALOGUE, args.mutants)  # an unknown name: before any loading

    folder, config = PORT.resolve(args.weights, args.config, args.weights_seed)
    _check_gate_bundles(args, folder, config)
    model = weights.load_model(folder, config)
    if getattr(args, "mutants", None) is not None:
        from gates.mutants import emit_table

        from .mutants import run_mutants

        start = time.perf_counter()
        table = run_mutants(
            model, config, _source(args, folder, loaded=model), args.seed, args.mutants
        )
        emit_table(table, args.json_path, args.markdown)
        print(f"chatterbox mutants: {time.perf_counter() - start:.0f} s", file=sys.stderr)
        return 0 if table.passed else 1
    return run_gate(
        model,
        config,
        _source(args, folder, loaded=model),
        args.seed,
        stop_on_fail=args.stop_on_fail,
        json_path=args.json_path,
        markdown=args.markdown,
        fp16_steps=getattr(args, "fp16_steps", "all"),
    )


def bench(args: argparse.Namespace) -> int:
    from . import weights
    from .bench import run_bench

    folder, config = PORT.resolve(args.weights, args.config, args.weights_seed)
    _check_gate_bundles(args, folder, config)  # the bench runs on the gate's bundles
    model = weights.load_model(folder, config)
    return run_bench(
        model,
        config,
        _source(args, folder, loaded=model),
        args.seed,
        args.repeats,
        args.json_path,
        profile=args.profile,
    )


def tokenize(args: argparse.Namespace) -> int:
    """`voxport tokenize chatterbox TEXT`: the chunks the pipeline would speak (text after the
    publisher's punc_norm, ids with SOT/EOT) as JSON on stdout: a host's `VP_TOKENS`."""
    from .export import TOKENIZER
    from .text import TextTokenizer

    folder, config = PORT.resolve(args.weights, args.config, args.weights_seed)
    tokenizer_json = Path(folder) / TOKENIZER
    if not tokenizer_json.is_file():
        raise UserError(f"chatterbox: {folder} has no {TOKENIZER}: pass a complete snapshot")
    chunks = TextTokenizer(tokenizer_json).chunks(args.text, config.text_budget)
    doc = {
        "model": "chatterbox",
        "text_budget": config.text_budget,
        "chunks": [{"text": c.text, "ids": [int(i) for i in c.ids]} for c in chunks],
    }
    print(json.dumps(doc, ensure_ascii=False))
    return 0


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
