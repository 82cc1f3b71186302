"""`voxport gate MODEL --weights-seeds 0,1,2,3,4 --seeds 0,1,2,3,4`: the gate over seeds.

Each run is its own `voxport gate` process (fresh memory, the same code path a user runs):
every weights seed at the first draw seed, then every other draw seed at the first weights
seed — so a draw sweep reuses one export (the bundle key does not hold the draw seed). The
summary is the worst value of each rung over the runs (`gates.sweep`), printed and, with
`--json` / `--markdown`, written.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from conversion.core.errors import UserError
from conversion.core.paths import write_json, write_text_file
from gates import sweep

# Flags the sweep sets per run (or writes itself): removed from the children's command line.
_OWN = ("--seeds", "--weights-seeds", "--seed", "--weights-seed", "--json", "--markdown")


def wants_sweep(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "seeds", None) or getattr(args, "weights_seeds", None))


def _child_argv(argv: list[str]) -> list[str]:
    out: list[str] = []
    skip = False
    for word in argv:
        if skip:
            skip = False
            continue
        if word in _OWN:
            skip = True
            continue
        if word.split("=", 1)[0] in _OWN:
            continue
        out.append(word)
    return out


def run(args: argparse.Namespace, argv: list[str]) -> int:
    """Run the sweep; 0 when every run passed, 1 otherwise."""
    if getattr(args, "plot", None):
        raise UserError("--plot draws one run: leave it out of a seed sweep")
    if args.weights_seeds and getattr(args, "weights", None) != "random":
        # Real weights are one set: every run would gate the same export under another name.
        raise UserError(
            "--weights-seeds needs --weights random (real weights are one set): "
            "sweep the draws with --seeds"
        )
    if len(args.weights_seeds or []) > 1 and args.bundle is not None and not args.overwrite:
        # Every weights seed is its own export: into one --bundle folder, each run would
        # replace the one before (refused without --overwrite, minutes into the sweep).
        raise UserError(
            f"--weights-seeds with --bundle {args.bundle}: every weights seed is its own "
            "export into that one folder; pass --overwrite to re-export it per seed, or leave "
            "out --bundle (each seed gets its own folder under bundles/)"
        )
    weights_seeds = args.weights_seeds or [args.weights_seed]
    seeds = args.seeds or [args.seed]
    plan = [(w, seeds[0]) for w in weights_seeds] + [(weights_seeds[0], s) for s in seeds[1:]]
    base = _child_argv(argv)
    reports: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="voxport-sweep-") as tmp:
        for i, (ws, s) in enumerate(plan, 1):
            out = Path(tmp) / f"gate-{i}.json"
            cmd = [sys.executable, "-m", "conversion.cli.main", *base]
            cmd += ["--weights-seed", str(ws), "--seed", str(s), "--json", str(out)]
            start = time.perf_counter()
            done = subprocess.run(cmd, capture_output=True, text=True)
            seconds = time.perf_counter() - start
            if not out.is_file():
                tail = done.stderr.strip().splitlines()[-1:] or ["(no output)"]
                raise UserError(
                    f"the gate at weights seed {ws}, seed {s} wrote no report "
                    f"(exit {done.returncode}): {tail[0]}"
                )
            report = json.loads(out.read_text())
            report["seeds"] = {"weights_seed": ws, "seed": s}
            reports.append(report)
            failed = [r["name"] for r in report["rungs"] if not r["passed"]]
            verdict = "passed" if report["passed"] else f"FAILED {', '.join(failed)}"
            print(
                f"[sweep {i}/{len(plan)}] weights seed {ws}, seed {s}: {verdict} ({seconds:.0f} s)",
                file=sys.stderr,
                flush=True,
            )
    rows = sweep.worst_over_seeds(reports)
    table = sweep.markdown(args.model, rows, len(reports))
    print(table)
    passed = all(r["passed"] for r in reports)
    write_json(
        args.json_path, {"model": args.model, "passed": passed, "runs": reports, "worst": rows}
    )
    if getattr(args, "markdown", None):
        write_text_file(args.markdown, table)
    return 0 if passed else 1
