"""The one bundle rule, seen from outside: export, speak and gate on the same arguments
export once. A re-export replaces the bundle folder by a rename, so the folder's inode and
its manifest (which records the export time) both change."""

import subprocess
from dataclasses import dataclass, field
from pathlib import Path


def bundle_identity(bundle: Path) -> tuple[int, str]:
    return bundle.stat().st_ino, (bundle / "manifest.json").read_text()


@dataclass
class Steps:
    """Each step's process, and the bundle's identity after it."""

    bundle: Path
    procs: dict[str, subprocess.CompletedProcess] = field(default_factory=dict)
    identities: dict[str, tuple[int, str]] = field(default_factory=dict)

    def run(self, name: str, proc: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
        self.procs[name] = proc
        if (self.bundle / "manifest.json").exists():
            self.identities[name] = bundle_identity(self.bundle)
        return proc

    def assert_exported_once(self) -> None:
        """The first step made (or found) the bundle; no later step exported it again."""
        (first_step, first_proc), *later = self.procs.items()
        assert first_proc.returncode == 0, first_proc.stderr[-3000:]
        first = self.identities[first_step]
        for name, identity in self.identities.items():
            assert identity == first, f"the bundle was exported again by {name}"
        for name, proc in later:
            assert "re-exporting" not in proc.stderr, (name, proc.stderr[-2000:])
