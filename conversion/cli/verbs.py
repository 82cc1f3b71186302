"""The verbs every port gets from its contract alone (no model code of their own): `export`,
`gate`, `bench`, and `speak` (`speak.py`). A model's CLI module gives only its own flags, turned
into options: `speak_options`, `gate_options`, `bench_options` (each checked before anything
loads); the port does the rest (`conversion/core/port.py`, `conversion/core/runs.py`)."""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from types import ModuleType

from conversion.core.bundle_source import BundleSource
from conversion.core.errors import UserError
from conversion.core.port import ModelPort
from conversion.core.runs import BenchRun, GateRun

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


def gate(port: ModelPort, commands: ModuleType, args: argparse.Namespace) -> int:
    """`voxport gate MODEL`: the ladder against the oracle (exit 1 on a failed rung), or with
    `--mutants` the kill table of the model's fault catalogue (exit 1 if a fault lives)."""
    if args.plot and not port.gate_plots:  # refused, never silently ignored
        raise UserError(
            f"--plot: the {port.name} gate draws no plot yet (kokoro's does); drop --plot"
        )
    options = commands.gate_options(args, port.config(args.config))  # bad flags: now
    chosen = None
    if args.mutants is not None:
        from gates.mutants import select

        catalogue = importlib.import_module(f"conversion.{port.name}.mutants").CATALOGUE
        chosen = select(catalogue, args.mutants)  # an unknown name: before any loading
    model, config, source = _loaded(port, args)
    run = GateRun(
        model,
        config,
        source,
        args.dtype,
        args.seed,
        options,
        args.json_path,
        stop_on_fail=args.stop_on_fail,
        markdown=args.markdown,
        plot=args.plot,
        mutants=chosen,
    )
    if chosen is None:
        return port.run_gate(run)
    from gates.mutants import emit_table

    start = time.perf_counter()
    table = port.run_mutants(run)
    emit_table(table, args.json_path, args.markdown)
    seconds = time.perf_counter() - start
    print(
        f"{port.name} mutants: {table.killed}/{table.total} killed in {seconds:.0f} s",
        file=sys.stderr,
    )
    return 0 if table.passed else 1


def bench(port: ModelPort, commands: ModuleType, args: argparse.Namespace) -> int:
    """`voxport bench MODEL`: speed and memory of the bundle, as flat JSON."""
    options = commands.bench_options(args, port.config(args.config))  # bad flags: now
    model, config, source = _loaded(port, args)
    run = BenchRun(
        model,
        config,
        source,
        args.dtype,
        args.seed,
        options,
        args.json_path,
        repeats=args.repeats,
        profile=args.profile,
        workers=args.workers,
    )
    return port.run_bench(run)


def _loaded(port: ModelPort, args: argparse.Namespace):
    """The model in memory, its config, and the bundles it may ask for. A `--bundle` made
    from other arguments (no `--overwrite`) is refused before the model loads."""
    folder, config = port.resolve(args.weights, args.config, args.weights_seed)
    source = BundleSource(port, folder, args.config, path=args.bundle, overwrite=args.overwrite)
    port.check_bundles(source, config, args.dtype)
    source.loaded = port.load_model(folder, config)
    return source.loaded, config, source


PORT_VERBS = {"export": export, "speak": speak, "gate": gate, "bench": bench}
