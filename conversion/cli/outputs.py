"""Where a run writes, checked against what it reads, before any work (issue 29).

A run's outputs are its files (`-o`, `--json`, `--markdown`, `--plot`, `--timings`) and its folders
(`export --output-dir`, and a `--bundle`, which `speak`, `gate` and `bench` may export into);
its inputs are the files and folders it reads (`--ref`, a model's own input files such as
Kokoro's `--voice` pack, the `--weights` folder, the `--bundle`). Refused, in one line, before
anything is made, resolved or loaded:

- an output that is an input of the same run (`--ref r.wav -o r.wav`: the reference would be
  replaced by what was made from it), or lies inside an input folder (the weights folder: its
  files are hashed and read, Audio8 hashes every one; the `--bundle`: see next);
- an output inside a bundle (`-o B/x.wav`, `--output-dir B/sub`): a bundle holds only what its
  manifest lists, so every later use of it would refuse the stray entry;
- two outputs of one run on one file (`--json x --markdown x`: the second replaces the first);
- an `--output-dir` that holds an input of the run, or the working folder (`export
  --output-dir .`): an export replaces its folder whole by a rename.

Paths are compared by resolved identity (`os.path.realpath`, and `os.path.samefile` for
files that exist: links, `..`, hard links and bind mounts name one file), never as strings.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable
from pathlib import Path

from conversion.core.bundle import MANIFEST, is_bundle_folder
from conversion.core.errors import UserError
from conversion.core.paths import NAME_MAX, check_name_lengths, shown

#: The output files a verb may name: (attribute, flag).
FILE_FLAGS = (("output", "-o"), ("json_path", "--json"), ("markdown", "--markdown"),
              ("plot", "--plot"), ("timings", "--timings"))  # fmt: skip
#: The folders a verb may write: an export's destination, and a `--bundle` (exported there
#: when missing or stale).
FOLDER_FLAGS = (("output_dir", "--output-dir"), ("bundle", "--bundle"))
#: The verbs that may write a bundle folder (an export, or a stale --bundle re-exported).
WRITING_VERBS = ("export", "gate", "speak", "bench")
#: The longest bundle folder name: beside a folder B its writers make `.B.lock`,
#: `.B.tmp-PID-xxxxxxxx`, `.B.old-PID` and side bundles such as `B-gate-est-fp16` (and their
#: staging folders), each a name that must fit NAME_MAX too.
BUNDLE_NAME_MAX = NAME_MAX - 64
#: Files a verb reads (a model's own inputs come from its CLI module's `input_files`).
INPUT_FLAGS = (("ref", "--ref"),)


def _real(path: Path | str) -> str:
    return os.path.realpath(path)


def same_file(a: Path | str, b: Path | str) -> bool:
    """Whether `a` and `b` name one file or folder (existing or not)."""
    if _real(a) == _real(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet): the resolved paths decide
        return False


def inside(path: Path | str, folder: Path | str) -> bool:
    """Whether `path` lies strictly inside `folder` (resolved)."""
    p, f = _real(path), _real(folder)
    return p != f and os.path.commonpath([p, f]) == f


def bundle_above(path: Path | str) -> Path | None:
    """The nearest existing voxport bundle strictly above `path` (resolved), if any."""
    p = Path(_real(path))
    for folder in p.parents:
        if (folder / MANIFEST).is_file() and is_bundle_folder(folder):
            return folder
    return None


def check_names(args: argparse.Namespace) -> None:
    """Every path flag given: not empty, and each name within the file system's limits (a
    longer one fails every call on it, some only after the work)."""
    for attr, flag in (*FILE_FLAGS, *FOLDER_FLAGS, *INPUT_FLAGS, ("weights", "--weights")):
        value = getattr(args, attr, None)
        if value is None:
            continue
        if attr == "bundle" and args.verb == "serve":
            flag = "BUNDLE"  # `voxport serve BUNDLE`: a positional
        if not str(value):
            raise UserError(f"{flag} is empty: give a path")
        check_name_lengths(Path(value), f"{flag} {shown(value)}")
        size = len(os.fsencode(Path(value).name))
        if (
            attr in ("output_dir", "bundle")
            and args.verb in WRITING_VERBS
            and size > BUNDLE_NAME_MAX
        ):
            raise UserError(
                f"{flag} {shown(value)}: a bundle folder's name may be {BUNDLE_NAME_MAX} bytes, "
                f"this one is {size} (its lock, staging and side folders beside it add up to "
                f"{NAME_MAX - BUNDLE_NAME_MAX} more); give a shorter name"
            )


def check(
    args: argparse.Namespace,
    inputs: Iterable[tuple[str, Path]] = (),
    weights: Path | None = None,
) -> None:
    """Refuse outputs over the run's own inputs, each other, or into a bundle (module doc).

    `inputs`: files the run reads as (flag, path) beyond `--ref` (a model's `input_files`);
    `weights`: the local weights folder, if one was given."""
    files = [(flag, Path(v)) for attr, flag in FILE_FLAGS if (v := getattr(args, attr, None))]
    folders = [(f, Path(v)) for attr, f in FOLDER_FLAGS if (v := getattr(args, attr, None))]
    if args.verb not in WRITING_VERBS:  # `serve B`, `sideload --bundle B` only read it
        folders = []
    read = [(flag, Path(v)) for attr, flag in INPUT_FLAGS if (v := getattr(args, attr, None))]
    read += [(flag, Path(p)) for flag, p in inputs]
    if weights is not None:
        read.append(("--weights", weights))
    bundle = getattr(args, "bundle", None) if args.verb in WRITING_VERBS else None
    for i, (flag, path) in enumerate(files):
        for other_flag, other in files[:i]:
            if same_file(path, other):
                raise UserError(
                    f"{other_flag} and {flag} name the same file {shown(path)}: the second "
                    "would replace the first; give each output its own path"
                )
        _not_over_inputs(flag, path, read)
        if bundle is not None and (inside(path, bundle) or same_file(path, bundle)):
            raise UserError(
                f"{flag} {shown(path)} is inside --bundle {shown(bundle)}: a bundle holds only "
                "what its manifest lists (every later use would refuse a stray file); write it "
                "elsewhere"
            )
        _not_in_a_bundle(flag, path)
    for flag, folder in folders:
        _not_in_a_bundle(flag, folder)
        if flag != "--bundle":  # a --bundle is read first: a current one is used as it is
            _not_holding_inputs(flag, folder, read)


def _not_over_inputs(flag: str, path: Path, read: list[tuple[str, Path]]) -> None:
    """An output file is none of the files the run reads, nor inside a folder it reads."""
    for in_flag, source in read:
        if same_file(path, source):
            raise UserError(
                f"{flag} {shown(path)} is the {in_flag} this run reads: writing it would "
                "replace it; give another output path"
            )
        if in_flag == "--weights" and inside(path, source):
            raise UserError(
                f"{flag} {shown(path)} is inside the weights folder {shown(source)}, an input "
                "of this run (its files are read and hashed): write it elsewhere"
            )


def _not_holding_inputs(flag: str, folder: Path, read: list[tuple[str, Path]]) -> None:
    """An export's folder holds neither the working folder nor anything the run reads: it is
    replaced whole by a rename."""
    try:
        cwd = Path.cwd()
    except OSError:  # the working folder was removed: nothing there to replace
        cwd = None
    if cwd is not None and (inside(cwd, folder) or same_file(cwd, folder)):
        raise UserError(
            f"{flag} {shown(folder)} holds the working folder: an export replaces its folder "
            "whole by a rename; give a new folder outside it"
        )
    for in_flag, source in read:
        if inside(source, folder) or same_file(source, folder):
            raise UserError(
                f"{flag} {shown(folder)} holds the {in_flag} {shown(source)} this run reads: "
                "an export replaces its folder whole; give another folder"
            )


def _not_in_a_bundle(flag: str, path: Path) -> None:
    bundle = bundle_above(path)
    if bundle is not None:
        raise UserError(
            f"{flag} {shown(path)} is inside the bundle {shown(bundle)}: a bundle holds only what "
            "its manifest lists (every later use would refuse a stray entry); write it elsewhere"
        )
