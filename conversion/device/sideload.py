"""`voxport sideload`: push a verified bundle into an app's Documents, file by file, and prove
every file arrived by pulling it back and comparing its sha256 (docs/on-device.md).

Why file by file and why the pull-back (device reports): `devicectl device copy to` can exit 0
on a dropped transfer, and copying a folder into an existing one does not reliably add new
files. A partly copied asset is worse than a missing one: the device's Core AI compile cache is
keyed by content, so an app that loads it keeps a compile of the broken asset. So:

- the bundle is verified against its own manifest before anything is copied;
- every file goes up on its own, under `Documents/models/<bundle folder name>/`, keeping its
  path inside the bundle (an asset folder keeps its `.aimodel` / `.aimodelc` name);
- every file is pulled back into a temp folder and its sha256 compared with the local one;
- `manifest.json` goes last, and only when every other file checked out: an app that finds
  no new manifest cannot load a half-pushed bundle through it;
- a failure names the file, the asset it belongs to, and what to do; nothing is reported done.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from conversion.core import bundle_lock
from conversion.core.bundle import MANIFEST, Manifest, file_sha256, load_manifest
from conversion.core.errors import UserError, VoxportError
from conversion.core.progress import progress_steps
from conversion.device.xcrun import Devicectl, find_xcrun, shown

REMOTE_ROOT = "Documents/models"
# A device that stops answering fails every file: give up after this many failures in a row.
MAX_FAILURES_IN_A_ROW = 3


class SideloadFailed(VoxportError):
    """A push that did not arrive intact: exit 1 with its report (not a user mistake)."""


@dataclass(frozen=True)
class Transfer:
    """One file of the bundle: where it is, where it goes, what it must hash to."""

    rel: str  # posix path inside the bundle
    local: Path
    remote: str  # path inside the app's container
    sha256: str
    check: Path  # where the pulled-back copy lands

    @property
    def top(self) -> str:
        """The bundle entry this file belongs to: an asset folder, or the file itself."""
        return PurePosixPath(self.rel).parts[0]


@dataclass(frozen=True)
class Failure:
    transfer: Transfer
    reason: str


def remote_folder(bundle: Path) -> str:
    return f"{REMOTE_ROOT}/{Path(bundle).resolve().name}"


def verify(bundle: Path, model: str) -> Manifest:
    """The bundle's own verification (every asset's content hash, every host file's sha256),
    and that it is a bundle of `model`; a UserError naming the file otherwise."""
    manifest = load_manifest(bundle, verify=True)
    if manifest.model != model:
        raise UserError(f"{bundle} is a bundle of '{manifest.model}', not '{model}'")
    return manifest


def plan(bundle: Path, check_dir: Path) -> list[Transfer]:
    """Every file of the bundle in a fixed order, manifest.json last."""
    bundle = Path(bundle)
    files = sorted(p for p in bundle.rglob("*") if p.is_file())
    files.sort(key=lambda p: p.relative_to(bundle).as_posix() == MANIFEST)
    remote = remote_folder(bundle)
    out = []
    for i, path in enumerate(files):
        rel = path.relative_to(bundle).as_posix()
        # Flat names in the check folder: no local folder to create before a pull.
        check = check_dir / f"{i:05d}-{path.name}"
        out.append(Transfer(rel, path, f"{remote}/{rel}", file_sha256(path), check))
    return out


def dry_run_lines(ctl: Devicectl, transfers: list[Transfer]) -> list[str]:
    """The exact commands a run executes: per file, its `copy to`, then its check."""
    lines = []
    for t in transfers:
        lines.append(shown(ctl.copy_to(t.local, t.remote)))
        lines.append(shown(ctl.copy_from(t.remote, t.check)))
        lines.append(f"# check: sha256 of {t.check} must be {t.sha256}")
    return lines


def _pulled(path: Path, name: str) -> Path | None:
    """The pulled-back file (devicectl may treat the destination as a folder)."""
    if path.is_file():
        return path
    if path.is_dir() and (path / name).is_file():
        return path / name
    return None


def push_one(ctl: Devicectl, t: Transfer) -> str | None:
    """Push one file and check it; None when it arrived intact, else why not."""
    sent = ctl.run(ctl.copy_to(t.local, t.remote))
    if sent.returncode != 0:
        return f"copy to failed ({sent.last_line})"
    got = ctl.run(ctl.copy_from(t.remote, t.check))
    back = _pulled(t.check, t.local.name)
    if got.returncode != 0 or back is None:
        return f"copy to exited 0 but the file could not be read back ({got.last_line})"
    digest = file_sha256(back)
    if digest != t.sha256:
        return (
            f"copy to exited 0 but the copy on the device differs "
            f"(sha256 {digest[:12]}… != {t.sha256[:12]}…)"
        )
    return None


def push(
    ctl: Devicectl, transfers: list[Transfer], progress: bool = True
) -> tuple[list[Failure], list[Transfer]]:
    """Push and check every file; (failures, files never pushed). The manifest goes only when
    everything before it arrived intact."""
    failures: list[Failure] = []
    skipped: list[Transfer] = []
    in_a_row = 0
    with progress_steps(len(transfers), "sideload", enabled=progress) as steps:
        for i, t in enumerate(transfers):
            if t.rel == MANIFEST and failures:
                skipped.append(t)
                steps.step(f"{t.rel} withheld")
                continue
            reason = push_one(ctl, t)
            steps.step(f"{t.rel} {'checked' if reason is None else 'FAILED'}")
            in_a_row = in_a_row + 1 if reason else 0
            if reason:
                failures.append(Failure(t, reason))
            if in_a_row >= MAX_FAILURES_IN_A_ROW:
                skipped.extend(transfers[i + 1 :])
                break
    return failures, skipped


def _entry_name(top: str, manifest: Manifest) -> str:
    for graph, g in manifest.graphs.items():
        if g["asset"] == top:
            return f"asset {top} (graph '{graph}')"
    return f"file {top}"


def failure_report(
    failures: list[Failure], skipped: list[Transfer], manifest: Manifest, remote: str, total: int
) -> str:
    """What went wrong, which assets are now partly copied on the device, and what to do."""
    first = failures[0].transfer
    lines = [
        f"sideload failed: {first.rel} did not arrive intact on the device "
        f"({len(failures)} of {total} files failed, {len(skipped)} not pushed) in {remote}:"
    ]
    for f in failures:
        lines.append(f"{f.transfer.rel} ({_entry_name(f.transfer.top, manifest)}): {f.reason}")
    broken = sorted({f.transfer.top for f in failures} | {t.top for t in skipped})
    if any(t.rel == MANIFEST for t in skipped):
        lines.append(f"{MANIFEST} was not pushed: an app cannot load this push through it.")
    named = ", ".join(_entry_name(b, manifest) for b in broken if b != MANIFEST)
    if named:
        lines.append(f"Partly copied or missing on the device: {named}.")
    lines.append(
        "Do not launch the app on this bundle: Core AI's compile cache on the device is keyed "
        "by content and keeps a compile of a partial asset. Re-run `voxport sideload` (it "
        "pushes and checks every file again); if the app already loaded the bundle, delete "
        "the app (its container and caches) and reinstall it first."
    )
    return "\n".join(lines)


def sideload(
    bundle: Path,
    model: str,
    device: str,
    app_id: str,
    dry_run: bool = False,
    progress: bool = True,
    echo: Callable[[str], None] = print,
) -> int:
    """The whole verb: 0 when every file was pushed and checked; 1 when any was not (the
    report is raised as the error text of `SideloadFailed`); UserError before any copy."""
    bundle = Path(bundle)
    with bundle_lock.Use(bundle):  # no export replaces it between the check and the last copy
        return _sideload(bundle, model, device, app_id, dry_run, progress, echo)


def _sideload(
    bundle: Path,
    model: str,
    device: str,
    app_id: str,
    dry_run: bool,
    progress: bool,
    echo: Callable[[str], None],
) -> int:
    manifest = verify(bundle, model)
    if not dry_run:
        find_xcrun()  # the commands name `xcrun` as a user types it: the same in --dry-run
    ctl = Devicectl(device, app_id)
    remote = remote_folder(bundle)
    if dry_run:
        check_dir = Path(tempfile.gettempdir()) / f"voxport-sideload-{bundle.resolve().name}"
        transfers = plan(bundle, check_dir)
        echo(f"# mkdir -p {check_dir}")
        for line in dry_run_lines(ctl, transfers):
            echo(line)
        return 0
    with tempfile.TemporaryDirectory(prefix="voxport-sideload-") as tmp:
        transfers = plan(bundle, Path(tmp))
        failures, skipped = push(ctl, transfers, progress)
    if failures:
        raise SideloadFailed(failure_report(failures, skipped, manifest, remote, len(transfers)))
    size = sum(t.local.stat().st_size for t in transfers)
    echo(
        f"sideloaded {len(transfers)} files ({size / 1e6:.1f} MB) of {bundle.name} to {remote} "
        f"in {app_id} on {device}: each pulled back and its sha256 checked"
    )
    return 0
