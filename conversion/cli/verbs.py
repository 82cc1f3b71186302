"""The verbs every port gets from its contract alone (no model code of their own): `export`,
and `speak` (`speak.py`: the model's CLI module gives only its flags as options)."""

from __future__ import annotations

import argparse
import time
from types import ModuleType

from conversion.core.port import ModelPort

from .speak import speak


def export(port: ModelPort, _commands: ModuleType, args: argparse.Namespace) -> int:
    """`voxport export MODEL`: every graph at `--dtype` into `--output-dir`, keyed for reuse."""
    folder, config = port.resolve(args.weights, args.config, args.weights_seed)
    dest = args.output_dir
    if dest is None:
        dest = port.bundle_path(args.config, args.dtype, weights_tag=port.weights_tag(folder))
    start = time.perf_counter()
    port.export(folder, config, dest, args.dtype, args.overwrite)
    print(f"wrote {dest} ({time.perf_counter() - start:.0f} s)")
    return 0


PORT_VERBS = {"export": export, "speak": speak}
