"""`voxport tokenize|voice audio8_tts`, and the flags Audio8 adds to the verbs every port has
(`export`, `gate`, `bench`, `speak`: `conversion/cli/verbs.py`), turned into its options."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
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


@dataclass(frozen=True)
class GateOptions:
    """`voxport gate audio8_tts`'s own flag: the exported-precision rows to gate."""

    precision_rows: tuple[str, ...] = ()


@dataclass(frozen=True)
class BenchOptions:
    """`voxport bench audio8_tts`'s own flag: frames to draw (None: the config's default)."""

    frames: int | None = None


def gate_options(args: argparse.Namespace, _config) -> GateOptions:
    from .gate import precision_rows

    return GateOptions(precision_rows=tuple(precision_rows(args.precision_rows)))  # bad: now


def bench_options(args: argparse.Namespace, _config) -> BenchOptions:
    if args.frames is not None and args.frames < 1:  # before minutes of loading
        raise UserError(f"audio8_tts bench: --frames must be at least 1, got {args.frames}")
    return BenchOptions(frames=args.frames)


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
