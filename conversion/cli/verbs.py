"""The verbs every port gets from its contract alone (no model code of their own)."""

from __future__ import annotations

import argparse
import time

from conversion.core.port import ModelPort


def export(port: ModelPort, args: argparse.Namespace) -> int:
    """`voxport export MODEL`: every graph at `--dtype` into `--output-dir`, keyed for reuse."""
    folder, config = port.resolve(args.weights, args.config, args.weights_seed)
    start = time.perf_counter()
    port.export(folder, config, args.output_dir, args.dtype, args.overwrite)
    print(f"wrote {args.output_dir} ({time.perf_counter() - start:.0f} s)")
    return 0


PORT_VERBS = {"export": export}
