"""`xcrun devicectl`, as voxport uses it: copy files into and out of an app's data container,
and launch the app with environment variables (docs/on-device.md).

Commands are built as argv lists (`Devicectl.copy_to(...)` and friends) so that `--dry-run`
prints exactly what a real run executes. `Devicectl.run` executes one; `find_xcrun` is the
one-line error where there is no `xcrun` (any machine but a Mac with Xcode).
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from conversion.core.errors import UserError

DOMAIN_TYPE = "appDataContainer"


def find_xcrun() -> str:
    """The `xcrun` on PATH, or a UserError saying what is missing and what works without it."""
    found = shutil.which("xcrun")
    if found is None:
        raise UserError(
            "xcrun is not on PATH: device commands need a Mac with Xcode "
            "(pass --dry-run to print the commands instead)"
        )
    return found


@dataclass(frozen=True)
class Result:
    """One finished command: its exit status and the last line it printed (for a report)."""

    returncode: int
    stdout: str
    stderr: str

    @property
    def last_line(self) -> str:
        lines = [ln for ln in (self.stderr + "\n" + self.stdout).splitlines() if ln.strip()]
        return lines[-1].strip() if lines else f"exit status {self.returncode}"


@dataclass(frozen=True)
class Devicectl:
    """The devicectl commands for one device and one app (bundle identifier)."""

    device: str
    app_id: str
    xcrun: str = "xcrun"
    timeout_s: float = 600.0

    def _container(self) -> list[str]:
        return [
            "--device",
            self.device,
            "--domain-type",
            DOMAIN_TYPE,
            "--domain-identifier",
            self.app_id,
        ]

    def copy_to(self, source: Path, destination: str) -> list[str]:
        """Push one local file to `destination`, a path inside the app's container."""
        return [self.xcrun, "devicectl", "device", "copy", "to", *self._container()] + [
            "--source",
            str(source),
            "--destination",
            destination,
        ]

    def copy_from(self, source: str, destination: Path) -> list[str]:
        """Pull one file at `source` (inside the app's container) to a local path."""
        return [self.xcrun, "devicectl", "device", "copy", "from", *self._container()] + [
            "--source",
            source,
            "--destination",
            str(destination),
        ]

    def launch(self, env: dict[str, str]) -> list[str]:
        """Launch the app with `env` as its launch environment."""
        return [
            self.xcrun,
            "devicectl",
            "device",
            "process",
            "launch",
            "--device",
            self.device,
            "--environment-variables",
            json.dumps(env, sort_keys=True),
            self.app_id,
        ]

    def run(self, argv: list[str]) -> Result:
        """Run one command to the end; a command that hangs past `timeout_s` is a failure."""
        try:
            proc = subprocess.run(
                argv, capture_output=True, text=True, timeout=self.timeout_s, check=False
            )
        except subprocess.TimeoutExpired:
            return Result(124, "", f"timed out after {self.timeout_s:.0f} s: {shlex.join(argv)}")
        except OSError as e:
            return Result(127, "", f"{argv[0]}: {e.strerror}")
        return Result(proc.returncode, proc.stdout, proc.stderr)


def shown(argv: list[str]) -> str:
    """A command as a shell line a user can paste."""
    return shlex.join(argv)
