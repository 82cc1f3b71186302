"""`voxport export|gate|bench core`: the toolkit proving itself on its small graphs.

`gate core` exports a mixed-precision bundle of the self-test graphs into a temp folder and
climbs a ladder through the real converter and runtime (in a child process, so a runtime abort
is a failed rung): fp32 parity, fp16 and int8 PSNR, a KV decoder's greedy tokens, the in-graph
sampler against the host sampler, and the conv-basis STFT/iSTFT against torch.
"""

from __future__ import annotations

import argparse
import time

from conversion.core.errors import UserError
from conversion.core.export.precision import Precision


def _reject_weights(args: argparse.Namespace) -> None:
    if getattr(args, "weights", None) not in (None, "random"):
        raise UserError("model 'core' has no weights: its graphs are seeded (--seed)")


def export(args: argparse.Namespace) -> int:
    from .export import build_bundle

    _reject_weights(args)
    start = time.perf_counter()
    build_bundle(args.output_dir, args.seed, Precision.parse(args.dtype), args.overwrite)
    print(f"wrote {args.output_dir} ({time.perf_counter() - start:.1f} s)")
    return 0


def speak(args: argparse.Namespace) -> int:
    raise UserError("model 'core' has no voice: speak with a TTS model (see `voxport --help`)")


def gate(args: argparse.Namespace) -> int:
    from .gate import run_gate

    _reject_weights(args)
    return run_gate(args.seed, args.plot, args.stop_on_fail, args.json_path, args.markdown)


def bench(args: argparse.Namespace) -> int:
    from .bench import run_bench

    _reject_weights(args)
    return run_bench(args.seed, args.repeats, args.json_path, profile=args.profile)


VERBS = ("export", "speak", "gate", "bench")


def add_arguments(verb: str, parser: argparse.ArgumentParser) -> None:
    """The self-test adds no flags of its own."""
