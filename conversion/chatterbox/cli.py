"""`voxport export|gate|speak|bench chatterbox`: the flags Chatterbox adds, and each verb's
arguments turned into explicit calls on the port, the pipeline, the gate and the bench."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from conversion.core.errors import UserError
from conversion.core.port import BundleSource
from conversion.core.progress import console, progress_steps

from .port import PORT

# export: every port has it (conversion/cli/verbs.py)
VERBS = ("speak", "gate", "bench", "tokenize", "voice")
TOKEN_REPORT_EVERY = 50  # two seconds of speech; a published-size token takes ~3 s here


def add_arguments(verb: str, parser: argparse.ArgumentParser) -> None:
    if verb == "speak":
        parser.add_argument("--ref", default=None, metavar="WAV", help="reference voice (cloning)")
        parser.add_argument(
            "--exaggeration", type=float, default=0.5, help="emotion exaggeration (0.25-2)"
        )
        parser.add_argument("--cfg", type=float, default=0.5, help="CFG weight (0-3)")
        parser.add_argument(
            "--stream", action="store_true", help="write each chunk's audio as soon as it is ready"
        )
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
    return BundleSource(PORT, folder, args.config, path=args.bundle, loaded=loaded)


def _voice(args: argparse.Namespace, folder: Path, config, default, prompt_tokens_max: int):
    """The voice to speak with: cloned from --ref (publisher's encoders, eager), or the default."""
    from . import voice as voice_mod
    from . import weights

    if not args.ref:
        if default is None:
            raise UserError(
                "chatterbox: the snapshot has no default voice (conds.pt); pass --ref voice.wav"
            )
        return default
    model = weights.load_model(folder, config)
    print(f"chatterbox: cloning the voice in {args.ref}", file=sys.stderr)
    return voice_mod.clone_voice(
        model, args.ref, exaggeration=args.exaggeration, prompt_tokens_max=prompt_tokens_max
    )


def _token_progress(done: int, budget: int) -> None:
    if done % TOKEN_REPORT_EVERY == 0:
        console.print(f"  T3: {done} tokens drawn (budget {budget})")


def speak(args: argparse.Namespace) -> int:
    from conversion.core.runtime.workers import WorkerPool

    from . import voice as voice_mod
    from .pipeline import ChatterboxPipeline, SpeakOptions, seconds_of

    voice_mod.check_exaggeration(args.exaggeration)
    if not 0.0 <= args.cfg <= 3.0:
        raise UserError(f"--cfg must be in [0, 3] (the publisher's default is 0.5), got {args.cfg}")
    if args.ref:
        voice_mod.inspect_reference(args.ref)
    target = args.output  # checked writable by the CLI before any work
    folder, config = PORT.resolve(args.weights, args.config, args.weights_seed)
    bundle = _source(args, folder).get(config, args.dtype)
    options = SpeakOptions(exaggeration=args.exaggeration, cfg_weight=args.cfg)
    opener = lambda isolate: ChatterboxPipeline(bundle, isolate=isolate)  # noqa: E731
    with WorkerPool(opener, args.workers) as pool:
        cb = pool.pipeline
        chunks = cb.chunks(args.text)
        voice = _voice(args, folder, config, cb.default_voice, cb.config.prompt_tokens_max)
        start = time.perf_counter()
        audio, results, first_s = _speak_into(target, pool, chunks, voice, options, args, start)
    seconds = time.perf_counter() - start
    dur = seconds_of(audio)
    stopped = sum(r.t3.stopped for r in results)
    print(
        f"wrote {target}: {dur:.2f} s of audio in {seconds:.1f} s "
        f"(real-time factor {seconds / max(dur, 1e-9):.2f}, {len(results)} chunk(s), "
        f"{stopped} stopped on the stop token, {args.workers} worker(s)); time to first audio "
        f"{first_s:.2f} s ({'streamed' if args.stream else 'whole utterance'})"
    )
    if PORT.is_random(folder):
        print("note: random weights: this audio is noise, not speech", file=sys.stderr)
    return 0


def _speak_into(target: Path, pool, chunks, voice, options, args: argparse.Namespace, start):
    """Speak `chunks` into the wav `target` (each chunk appended as soon as it and every
    earlier one are ready when `--stream`, else written whole at the end): the audio, the
    chunk results and the seconds from `start` to the first audio on disk."""
    from conversion.core.host.audio_io import speak_into_wav

    from .config import SAMPLE_RATE

    def speak(on_audio=None):
        with progress_steps(len(chunks), "speak chatterbox") as bar:
            return pool.pipeline.speak(
                args.text,
                voice=voice,
                options=options,
                seed=args.seed,
                chunks=chunks,
                on_chunk=lambda i, n, r: bar.step(f"{r.text[:32]} ({r.speech_tokens.size} tok)"),
                on_token=_token_progress,
                pool=pool,
                on_audio=on_audio,
            )

    return speak_into_wav(target, SAMPLE_RATE, speak, args.stream, start)


def gate(args: argparse.Namespace) -> int:
    from . import weights
    from .gate import run_gate

    if args.plot:  # refused, never silently ignored
        raise UserError(
            "--plot: the chatterbox gate draws no plot yet (kokoro's does); drop --plot"
        )

    folder, config = PORT.resolve(args.weights, args.config, args.weights_seed)
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
