"""What the device verbs run: `voxport sideload`, `voxport device-bench` (a Mac with Xcode and
a paired device; `--dry-run` anywhere) and `voxport fixtures swift`. The work is model-agnostic
and lives in `conversion.device.sideload` / `conversion.device.device_bench`; the model's benches
come from the registry. Their flags: `conversion.cli.main._add_device_verbs`."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from conversion.core.errors import UserError
from conversion.device import device_bench, sideload

from . import registry

DEFAULT_FIXTURES = Path("ios") / "Tests" / "Fixtures"


def run_sideload(args: argparse.Namespace) -> int:
    bundle = Path(args.bundle)
    try:
        return sideload.sideload(bundle, args.model, args.device, args.app_id, args.dry_run)
    except sideload.SideloadFailed as e:
        print(f"voxport: {e}", file=sys.stderr)
        return 1


def run_device_bench(args: argparse.Namespace) -> int:
    if args.wait <= 0 or args.poll <= 0:
        raise UserError("--wait and --poll take a positive number of seconds")
    benches = registry.resolve(args.model).benches
    env = device_bench.check_env(device_bench.parse_env(args.env), args.model, benches)
    out = Path(args.out) if args.out else Path("out") / "device-bench" / env["VP_BENCH"]
    try:
        return device_bench.device_bench(
            args.model,
            benches,
            args.device,
            args.app_id,
            args.env,
            out,
            dry_run=args.dry_run,
            wait_s=args.wait,
            poll_s=args.poll,
        )
    except device_bench.BenchTimeout as e:
        print(f"voxport: {e}", file=sys.stderr)
        return 1


def run_fixtures(args: argparse.Namespace) -> int:
    # Imported here: it imports torch and the model hosts.
    from . import swift_fixtures

    out = Path(args.out) if args.out else DEFAULT_FIXTURES
    if not args.check:
        files = swift_fixtures.write_fixtures(out)
        for rel, size in files.items():
            print(f"{size:>10}  {out / rel}")
        print(f"wrote {len(files)} files, {sum(files.values())} bytes, to {out}")
        return 0
    if not out.is_dir():
        raise UserError(f"no fixtures at {out} to check: run `voxport fixtures swift` first")
    with tempfile.TemporaryDirectory(prefix="voxport-fixtures-") as tmp:
        swift_fixtures.write_fixtures(Path(tmp))
        problems = swift_fixtures.compare_fixtures(Path(tmp), out)
    if not problems:
        print(f"{out}: current (regenerated and compared)")
        return 0
    print(f"{out}: {len(problems)} file(s) differ from what the Python code writes today:")
    for line in problems:
        print(f"  {line}")
    print(f"regenerate with: voxport fixtures swift --out {out}")
    return 1


RUNNERS = {"sideload": run_sideload, "device-bench": run_device_bench, "fixtures": run_fixtures}
