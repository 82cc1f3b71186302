"""`voxport gate|speak|bench|tokenize|voice audio8_tts`: the flags Audio8 adds, speak's as
options, and each other verb's arguments turned into explicit calls on the port, the gate and the
bench (`export` and `speak` are every port's, `conversion/cli/verbs.py`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from conversion.core.errors import UserError

from .port import PORT

if TYPE_CHECKING:
    from .pipeline import SpeakOptions

VERBS = (
    "gate",
    "bench",
    "tokenize",
    "voice",
)  # export and speak: every port has them (conversion/cli/verbs.py)


def add_arguments(verb: str, parser: argparse.ArgumentParser) -> None:
    if verb == "speak":
        parser.add_argument("--ref", default=None, metavar="WAV", help="reference voice (cloning)")
        parser.add_argument("--ref-text", default=None, help="the reference clip's transcript")
    if verb == "gate":
        parser.add_argument(
            "--precision-rows",
            default="fp16,int8,mixed",
            metavar="LIST",
            help="exported-precision rows to gate: fp16,int8,mixed (default; mixed = slow AR "
            "int8 + fast AR fp16), a subset, or none (each exports the `ar` graph alone at "
            "that precision once, beside the bundle)",
        )
    if verb == "bench":
        parser.add_argument(
            "--frames",
            type=int,
            default=None,
            help="frames to draw (default: three codec windows' worth reduced, 80; the gate's "
            "24 published)",
        )
    if verb == "voice":
        parser.add_argument(
            "--ref-text", default=None, help="the reference clip's transcript (required)"
        )


def _loaded(args: argparse.Namespace):
    """The snapshot in memory and its bundle (reused when current, else exported)."""
    from . import weights

    folder, config = _resolve(args)
    loaded = weights.load(folder, config)
    return loaded, _bundle(args, folder, config, loaded)


def _resolve(args: argparse.Namespace):
    """The snapshot and config; a `--bundle` made from other arguments (no `--overwrite`) is
    refused now, before the weights load."""
    folder, config = PORT.resolve(args.weights, args.config, args.weights_seed)
    PORT.check_reuse(folder, config, args.config, args.dtype, args.bundle, args.overwrite)
    return folder, config


def _bundle(args: argparse.Namespace, folder: Path, config, loaded) -> Path:
    return PORT.ensure_bundle(
        folder,
        config,
        args.config,
        args.dtype,
        path=args.bundle,
        loaded=loaded,
        overwrite=args.overwrite,
    )


def speak_options(args: argparse.Namespace, config) -> SpeakOptions:
    """`voxport speak audio8_tts`'s flags as options, checked before any weights load: a
    reference clip needs its transcript and is read now (it is registered through the bundle's
    encoder once the bundle is open: `Audio8Port.options_for_pipeline`)."""
    from .pipeline import SpeakOptions
    from .voice import load_reference

    if args.ref:
        if not args.ref_text:
            raise UserError(
                "audio8_tts: --ref needs --ref-text (the clip's transcript; the publisher's "
                "prompt carries it)"
            )
        load_reference(args.ref, config.codec_sample_rate)  # a bad clip fails before export
    return SpeakOptions(seed=args.seed, stream=args.stream, ref=args.ref, ref_text=args.ref_text)


def gate(args: argparse.Namespace) -> int:
    from .gate import run_gate

    if args.plot:  # refused, never silently ignored
        raise UserError(
            "--plot: the audio8_tts gate draws no plot yet (kokoro's does); drop --plot"
        )

    from conversion.core.port import BundleSource

    from . import weights
    from .gate import precision_bundles, precision_rows

    dtypes = precision_rows(args.precision_rows)  # a bad list fails before any export
    chosen = None
    if args.mutants is not None:
        from gates.mutants import select

        from .mutants import CATALOGUE

        chosen = select(CATALOGUE, args.mutants)  # an unknown name: before any loading

    folder, config = _resolve(args)
    loaded = weights.load(folder, config)
    source = BundleSource(
        PORT, folder, args.config, path=args.bundle, loaded=loaded, overwrite=args.overwrite
    )
    bundle = _bundle(args, folder, config, loaded)
    if chosen is not None:
        return _gate_mutants(args, loaded, bundle, chosen)
    return run_gate(
        loaded,
        bundle,
        args.seed,
        stop_on_fail=args.stop_on_fail,
        json_path=args.json_path,
        markdown=args.markdown,
        precision=precision_bundles(source, config, dtypes),
    )


def _gate_mutants(args: argparse.Namespace, loaded, bundle: Path, chosen: list) -> int:
    """`voxport gate audio8_tts --mutants [all|NAME,..]`: the fault catalogue's kill table (the
    ladder without the exported-precision rows, each fault against one reference record)."""
    from gates.mutants import emit_table

    from .mutants import run_mutants

    table = run_mutants(loaded, bundle, args.seed, chosen)
    emit_table(table, args.json_path, args.markdown)
    return 0 if table.passed else 1


def bench(args: argparse.Namespace) -> int:
    from .bench import run_bench

    if args.frames is not None and args.frames < 1:  # before minutes of loading
        raise UserError(f"audio8_tts bench: --frames must be at least 1, got {args.frames}")
    loaded, bundle = _loaded(args)
    return run_bench(
        loaded,
        bundle,
        args.seed,
        args.json_path,
        profile=args.profile,
        workers=args.workers,
        frames=args.frames,
        repeats=args.repeats,
    )


def tokenize(args: argparse.Namespace) -> int:
    """`voxport tokenize audio8_tts TEXT`: the pieces the pipeline speaks (no voice), each with
    its text segment's ids (what a host's `VP_TOKENS` takes) and its prompt's row 0, as JSON."""
    from .config import GENERATION
    from .prompt import build_prompt, clean_text, split_text
    from .tokenizer import load_tokenizer

    folder, config = PORT.resolve(args.weights, args.config, args.weights_seed)
    tokenizer = load_tokenizer(folder)
    max_frames = min(GENERATION.max_new_frames, config.max_seq_len // 4)
    pieces = split_text(tokenizer, config, args.text, max_frames)
    chunks = []
    for piece in pieces:
        ids = tokenizer.encode(clean_text(piece), add_special_tokens=False).ids
        prompt = build_prompt(tokenizer, config, piece, max_new_frames=max_frames)
        chunks.append({"text": piece, "ids": ids, "prompt": prompt[0].tolist()})
    doc = {"model": "audio8_tts", "config": config.name, "max_frames": max_frames, "chunks": chunks}
    print(json.dumps(doc, ensure_ascii=False))
    return 0


def voice(args: argparse.Namespace) -> int:
    """`voxport voice audio8_tts --ref WAV --ref-text T -o voice.npz`: the clip through the
    bundle's encoder graph, saved (atomically) with its transcript and the transcript's ids."""
    from conversion.core.paths import writable_file

    from .pipeline import Audio8Pipeline
    from .voice import load_reference, register

    if not args.ref_text or not args.ref_text.strip():
        raise UserError(
            "audio8_tts: --ref-text is required (the clip's transcript; the publisher's prompt "
            "carries it)"
        )
    target = writable_file(args.output)
    config = PORT.config(args.config)
    load_reference(args.ref, config.codec_sample_rate)  # a bad clip fails before any export
    folder = PORT.resolve_weights(args.weights, config, args.weights_seed)
    bundle = PORT.ensure_bundle(
        folder, config, args.config, args.dtype, path=getattr(args, "bundle", None)
    )
    with Audio8Pipeline(bundle) as pipeline:
        made = register(
            pipeline.session, args.ref, args.ref_text, pipeline.codec_config, pipeline.tokenizer
        )
    made.save(target)
    seconds = made.frames * pipeline.codec_config.frame_size / pipeline.codec_config.sample_rate
    print(
        f"wrote {target}: {made.frames} frames ({seconds:.2f} s) of {made.source}, "
        f"transcript {len(made.text_ids)} ids"
    )
    return 0
