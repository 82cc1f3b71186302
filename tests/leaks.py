"""What a test run left behind, counted after it (`.ci/run`, after pytest and swift test):
temp folders of voxport processes that are gone, library temp folders (the G2P's espeak-ng
copy) made during the run, and processes the run started that still run (issue 21: no leaks,
counted in CI; any is a failure there).

The run's processes are told apart from anything else on the machine by a token in their
environment (`VOXPORT_RUN_TOKEN`, exported by `.ci/run` and inherited by every process a test
starts); this process and its ancestors (the CI script) carry it too and are not counted.

    python -m tests.leaks --since EPOCH_SECONDS
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from conversion.core.paths import owner_alive

TOKEN = "VOXPORT_RUN_TOKEN"


def left_temp_folders(base: Path, since: float) -> list[str]:
    """Folders in `base` changed since `since`: voxport temp folders (`voxport-*<pid>-…`)
    whose process is gone, and folders holding an espeak-ng library copy."""
    left = []
    for p in sorted(base.iterdir()):
        try:
            if not p.is_dir() or p.is_symlink() or p.stat().st_mtime < since:
                continue
            if p.name.startswith("voxport-"):
                prefix = p.name[: p.name.find("-", len("voxport-")) + 1]
                if not owner_alive(p.name, prefix):
                    left.append(p.name)
            elif any(p.glob("libespeak-ng*")):
                left.append(p.name)
        except OSError:  # removed meanwhile, or not ours to read
            continue
    return left


def _ancestors(pid: int) -> set[int]:
    seen = set()
    while pid > 1 and pid not in seen:
        seen.add(pid)
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            break
        pid = int(stat.rsplit(")", 1)[1].split()[1])  # the field after the state: ppid
    return seen


def left_processes(token: str) -> list[str]:
    """Processes whose environment carries `token`, other than this one and its ancestors:
    `pid cmdline` each."""
    mine = _ancestors(os.getpid())
    left = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) in mine:
            continue
        try:
            env = (proc / "environ").read_bytes().split(b"\0")
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if f"{TOKEN}={token}".encode() in env:
            left.append(f"{proc.name} {cmd.strip()[:160]}")
    return left


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.leaks", description=__doc__.split("\n")[0])
    p.add_argument("--since", type=float, required=True, help="the run's start (epoch seconds)")
    p.add_argument("--grace", type=float, default=5.0, help="seconds a lagging process gets")
    args = p.parse_args(argv)
    token = os.environ.get(TOKEN)
    if not token:
        print(f"tests.leaks: {TOKEN} is not set: export it before the run", file=sys.stderr)
        return 2
    deadline = time.monotonic() + args.grace
    while (procs := left_processes(token)) and time.monotonic() < deadline:
        time.sleep(0.2)
    temps = left_temp_folders(Path(tempfile.gettempdir()), args.since)
    print(f"left behind: {len(temps)} temp folder(s), {len(procs)} process(es)")
    for line in temps + procs:
        print(f"  {line}")
    return 1 if temps or procs else 0


if __name__ == "__main__":
    sys.exit(main())
