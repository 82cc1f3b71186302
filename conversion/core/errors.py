"""Typed errors. Everything a user can cause by their input derives from `UserError`.

The CLI turns a `UserError` into a one-line message and exit code 2; anything else is a bug
and keeps its traceback.
"""

from __future__ import annotations


class VoxportError(Exception):
    """Base of every error voxport raises on purpose."""


class UserError(VoxportError):
    """Bad input, a missing file, an unwritable path: the message names the fix."""


class ExportLintError(UserError):
    """The exported program uses ops the Core AI converter cannot take."""

    def __init__(self, findings: list) -> None:
        self.findings = findings
        lines = [f"{len(findings)} problem(s) found before conversion:"]
        lines += [f"  - {f}" for f in findings]
        super().__init__("\n".join(lines))


class BundleIntegrityError(UserError):
    """A bundle on disk does not match its manifest (tampered, truncated or stale)."""


class BundleKeyMismatchError(BundleIntegrityError):
    """A bundle holds graphs made from another key (weights, sizes, precisions) than the one
    the process loading it asked for: another process re-exported the folder."""


class BundleNotFoundError(UserError):
    """No bundle (or no manifest) at the given path."""


class BucketOverflowError(UserError):
    """The input is longer than the largest bucket: the caller must split it."""


class InputSpecError(UserError):
    """A runtime call's inputs do not match the function's declared names, shapes or dtypes."""


class RuntimeCrash(VoxportError):
    """The Core AI runtime died (a Swift fatal error kills the whole process)."""


class WeightsError(UserError):
    """Weights folder missing, incomplete or with the wrong hash."""


class ReferenceAudioError(UserError):
    """A reference recording (voice cloning, voice registration) that cannot make a voice:
    missing, undecodable, empty, silent, non-finite or outside the model's length range."""
