"""Bundles: a folder of `.aimodel` assets plus `manifest.json`, written atomically.

A bundle is built in a temp folder next to its destination and renamed into place only when
every asset and the manifest are written, so an export that fails half way leaves nothing.
The manifest carries a content hash per asset; loading verifies them, so a re-export into the
same path (or a tampered file) can never be served with the old graph's numerics.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import shutil
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from conversion.core import bundle_lock
from conversion.core.errors import (
    BundleIntegrityError,
    BundleKeyMismatchError,
    BundleNotFoundError,
    UserError,
)
from conversion.core.export.precision import Precision
from conversion.core.json_file import JsonFileError, load_json_file
from conversion.core.paths import ensure_writable_folder, old_folder, staging_folder
from conversion.core.versions import package_versions

if TYPE_CHECKING:  # the export (and torch) loads with a writer, not with every manifest reader
    from conversion.core.export.program import AssetInfo, ExportedGraph, GraphSpec

FORMAT = "voxport-bundle/1"
MANIFEST = "manifest.json"
_PACKAGES = ("voxport", "torch", "coreai-torch", "coreai-core", "coreai-opt", "numpy")


def content_hash(path: Path) -> str:
    """sha256 over every file under `path` (relative name and bytes, in sorted order)."""
    h = hashlib.sha256()
    path = Path(path)
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for p in files:
        rel = p.relative_to(path).as_posix() if path.is_dir() else p.name
        h.update(rel.encode() + b"\0")
        with open(p, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        h.update(b"\0")
    return h.hexdigest()


def host_digest(path: Path) -> str:
    """What `meta.files` records for a host entry: a file's sha256, a folder's content hash."""
    return content_hash(path) if Path(path).is_dir() else file_sha256(path)


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def read_manifest_json(path: Path) -> dict[str, Any]:
    """`manifest.json` as a JSON object, or a one-line `BundleIntegrityError` naming what is
    wrong (`json_file`: bytes that are not UTF-8, text that is not JSON, nesting deeper than
    the parser recurses), or JSON that is not an object (a list, a string). OSError
    (unreadable) passes through: `load_manifest` names it."""
    try:
        doc = load_json_file(path)
    except JsonFileError as e:
        raise BundleIntegrityError(f"{path} is {e}; re-export it") from None
    if not isinstance(doc, dict):
        kind = {list: "list", str: "string", bool: "boolean", type(None): "null"}
        raise BundleIntegrityError(
            f"{path} holds a JSON {kind.get(type(doc), 'number')}, not the object a manifest "
            "is; re-export it"
        )
    return doc


@dataclass
class Manifest:
    model: str
    precision: str
    graphs: dict[str, dict]
    weights_sha256: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    voxport_version: str | None = None
    created: str = ""
    packages: dict[str, str | None] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    # What the graphs were made from (conversion.core.port.BundleKey): the reuse test compares it.
    key: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"format": FORMAT, **self.__dict__}

    @classmethod
    def from_json(cls, d: dict, where: Path) -> Manifest:
        if d.get("format") != FORMAT:
            raise BundleIntegrityError(
                f"{where}: not a {FORMAT} manifest (format={d.get('format')!r}); re-export it"
            )
        d = {k: v for k, v in d.items() if k != "format"}
        try:
            manifest = cls(**d)
        except TypeError as e:
            raise BundleIntegrityError(f"{where}: malformed manifest ({e}); re-export it") from e
        for name in ("config", "packages", "key"):  # read as objects by the reuse test
            if not isinstance(getattr(manifest, name), dict):
                raise BundleIntegrityError(f"{where}: malformed manifest ({name}); re-export it")
        manifest.check_names(where)
        return manifest

    def check_names(self, where: Path) -> None:
        """Every graph name, asset and host file a plain name inside the bundle: a manifest
        that names `../x` or `/x` would make a loader, a lowering or a sideload reach out of
        the bundle (its hash check would pass on whatever lies there)."""
        if not isinstance(self.graphs, dict) or not isinstance(self.meta, dict):
            raise BundleIntegrityError(f"{where}: malformed manifest (graphs, meta); re-export it")
        for name, g in sorted(self.graphs.items()):  # in name order: Swift reports the same
            _check_plain(where, "graph name", name)
            if not isinstance(g, dict) or not isinstance(g.get("functions"), dict):
                raise BundleIntegrityError(
                    f"{where}: malformed manifest (graph {name!r}); re-export it"
                )
            _check_plain(where, f"asset of graph {name!r}", g.get("asset"))
            if not isinstance(g.get("sha256"), str):
                raise BundleIntegrityError(
                    f"{where}: malformed manifest (graph {name!r} has no sha256); re-export it"
                )
        files = self.meta.get("files", {})
        if not isinstance(files, dict):
            raise BundleIntegrityError(f"{where}: malformed manifest (meta.files); re-export it")
        for name, digest in sorted(files.items()):
            _check_plain(where, "file", name)
            if not isinstance(digest, str):
                raise BundleIntegrityError(
                    f"{where}: malformed manifest (file {name!r} has no sha256); re-export it"
                )

    def entries(self) -> set[str]:
        """The top-level names the bundle holds: its manifest, assets and host files."""
        names = {MANIFEST, *(g["asset"] for g in self.graphs.values())}
        return names | set(self.meta.get("files", {}))

    def function(self, graph: str, function: str) -> dict:
        if graph not in self.graphs:
            raise UserError(f"no graph '{graph}' in this bundle (has: {sorted(self.graphs)})")
        fns = self.graphs[graph]["functions"]
        if function not in fns:
            raise UserError(f"graph '{graph}' has no function '{function}' (has: {sorted(fns)})")
        return fns[function]


def is_plain_name(name: object) -> bool:
    """A name that stays inside the folder it is joined to: one path component, not `.`,
    `..` or empty, no separator of either system, no NUL."""
    return (
        isinstance(name, str)
        and name not in ("", ".", "..")
        and not any(c in name for c in "/\\\0")
    )


def _check_plain(where: Path, what: str, name: object) -> None:
    if not is_plain_name(name):
        raise BundleIntegrityError(
            f"{where}: {what} {name!r} is not a plain name inside the bundle (no '/', '\\', "
            "'..' or absolute path): the manifest was edited; re-export the bundle"
        )


def key_digest(key: dict[str, Any]) -> str:
    """sha256 of a manifest key in one canonical JSON form (`BundleKey.digest`): what a
    parent hands its worker so the worker can check the manifest it loads without hashing."""
    text = json.dumps(key, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _key_summary(key: dict[str, Any]) -> str:
    weights = str(key.get("weights_sha256") or "?")[:12]
    graphs = ", ".join(f"{g} {p}" for g, p in sorted((key.get("graphs") or {}).items()))
    return f"key {key_digest(key)[:12]}… (weights {weights}…; {graphs or 'no graphs'})"


def check_key(bundle: Path, manifest: Manifest, want: dict[str, Any] | str | None) -> None:
    """Raise `BundleKeyMismatchError` naming both keys unless `manifest` was made from `want`
    (a manifest key, or its `key_digest`; None checks nothing)."""
    if want is None:
        return
    if (key_digest(manifest.key) if isinstance(want, str) else manifest.key) == want:
        return
    asked = f"key {want[:12]}…" if isinstance(want, str) else _key_summary(want)
    differs = ""
    if isinstance(want, dict):
        have = manifest.key
        fields = sorted(k for k in set(want) | set(have) if want.get(k) != have.get(k))
        differs = f"; they differ in {', '.join(fields)}"
    raise BundleKeyMismatchError(
        f"{bundle} now holds graphs made from {_key_summary(manifest.key)}, not from the "
        f"{asked} this process asked for{differs}: another process re-exported it; run again"
    )


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True) if not isinstance(value, str) else value
    return text if len(text) <= 16 else f"{text[:12]}…"


def key_differences(have: dict[str, Any], want: dict[str, Any], most: int = 3) -> str:
    """What differs between a bundle's key (`have`) and the one asked for (`want`), in a few
    words: `weights: 1a2b… there, 3c4d… here; config n_layer: 2 there, 4 here`."""
    out: list[str] = []
    order = {f: i for i, f in enumerate(("weights_sha256", "model", "config", "graphs"))}
    for field_name in sorted(set(have) | set(want), key=lambda f: (order.get(f, 9), f)):
        a, b = have.get(field_name), want.get(field_name)
        if a == b:
            continue
        if isinstance(a, dict) and isinstance(b, dict):
            subs = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
            for k in subs:
                out.append(f"{field_name} {k}: {_short(a.get(k))} there, {_short(b.get(k))} here")
        else:
            label = "weights" if field_name == "weights_sha256" else field_name
            out.append(f"{label}: {_short(a)} there, {_short(b)} here")
    more = f" (and {len(out) - most} more)" if len(out) > most else ""
    return "; ".join(out[:most]) + more


def check_writable_destination(dest: Path, overwrite: bool) -> None:
    """Fail before any work: an existing folder without --overwrite, something that is not a
    voxport bundle even with it (--overwrite deletes what it replaces: only a folder whose
    manifest says it is a bundle), or an unwritable parent."""
    dest = Path(dest)
    if dest.exists() or dest.is_symlink():
        if not overwrite:
            raise UserError(f"{dest} already exists: pass --overwrite to replace it")
        if not is_bundle_folder(dest):
            raise UserError(
                f"{dest} is not a voxport bundle (no {MANIFEST} of format {FORMAT} in it): "
                "--overwrite replaces only a bundle; give another --output-dir, or remove it "
                "yourself"
            )
    ensure_writable_folder(dest.parent)


def is_bundle_folder(path: Path) -> bool:
    """Whether `path` is a real folder (not a link) whose manifest says it is a voxport bundle
    (whatever else is wrong with it: a stale or tampered bundle may be replaced)."""
    path = Path(path)
    if path.is_symlink() or not path.is_dir():
        return False
    try:
        return read_manifest_json(path / MANIFEST).get("format") == FORMAT
    except (OSError, BundleIntegrityError):
        return False


class BundleWriter:
    """Context manager building a bundle in a temp folder; renamed into place on success."""

    def __init__(
        self,
        dest: Path | str,
        model: str,
        precision: Precision | str = Precision.FP32,
        overwrite: bool = False,
        weights_sha256: str | None = None,
        config: dict | None = None,
        meta: dict | None = None,
        key: dict | None = None,
        info: AssetInfo | None = None,
    ) -> None:
        self.dest = Path(dest)
        self.key = key or {}
        self.info = info
        self.model = model
        self.precision = Precision.parse(precision)
        self.overwrite = overwrite
        self.weights_sha256 = weights_sha256
        self.config = config or {}
        self.meta = meta or {}
        self.graphs: dict[str, dict] = {}
        self._tmp: Path | None = None

    def __enter__(self) -> BundleWriter:
        # Held until the finished folder is renamed in: a second writer of `dest` waits (and
        # then finds it written), and no process replaces it under one that has it loaded.
        self._writing = bundle_lock.writing(self.dest)
        self._writing.__enter__()
        try:
            check_writable_destination(self.dest, self.overwrite)
            self._tmp = staging_folder(self.dest)
        except BaseException:
            self._writing.__exit__(None, None, None)
            raise
        return self

    @property
    def staging(self) -> Path:
        assert self._tmp is not None, "use BundleWriter as a context manager"
        return self._tmp

    def add_graph(
        self,
        spec: GraphSpec,
        precision: Precision | str | None = None,
        lint: bool = True,
        on_function=None,
    ) -> ExportedGraph:
        from conversion.core.export.program import export_graph

        precision = Precision.parse(precision or self.precision)
        asset = f"{spec.name}.aimodel"
        exported = export_graph(
            spec, self.staging / asset, precision, lint, on_function, info=self.info
        )
        self._record(spec, exported)
        return exported

    def add_graphs(
        self,
        specs: list[GraphSpec],
        workers: int = 1,
        on_function: Callable[[str, str], None] | None = None,
    ) -> list[ExportedGraph]:
        """Every graph of `specs` at the bundle's precision, `workers` exported side by side
        (each graph in its own process: the converter is single-threaded); the manifest lists
        them in `specs` order whatever order they finish in."""
        from conversion.core.export.program import export_graphs

        done = export_graphs(specs, self.staging, self.precision, workers, self.info, on_function)
        for spec, exported in zip(specs, done, strict=True):
            self._record(spec, exported)
        return done

    def _record(self, spec: GraphSpec, exported: ExportedGraph) -> None:
        asset = exported.path.name
        self.graphs[spec.name] = {
            "asset": asset,
            "precision": exported.precision.value,
            "sha256": content_hash(self.staging / asset),
            "functions": exported.functions,
            "export_seconds": round(exported.seconds, 3),
            "meta": spec.meta,
        }

    def add_file(self, src: Path, name: str | None = None) -> Path:
        """Host-side data that travels with the bundle (voices, tables); hashed like assets.
        A folder (Kokoro's `g2p/`) is one entry, hashed as a whole like an asset folder
        (`content_hash`: every file's relative path and bytes), so the manifest's names stay
        plain names."""
        target = self.staging / (name or Path(src).name)
        if Path(src).is_dir():
            shutil.copytree(src, target)
        else:
            shutil.copy2(src, target)
        self.meta.setdefault("files", {})[target.name] = host_digest(target)
        return target

    def add_arrays(self, name: str, arrays: dict) -> Path:
        """Host-side arrays (e.g. a source layer's weights) saved as `name` (.npz), hashed."""
        import numpy as np

        target = self.staging / name
        with open(target, "wb") as f:
            np.savez(f, **arrays)
        self.meta.setdefault("files", {})[target.name] = file_sha256(target)
        return target

    def manifest(self) -> Manifest:
        versions = package_versions(_PACKAGES)
        return Manifest(
            model=self.model,
            precision=self.precision.value,
            graphs=self.graphs,
            weights_sha256=self.weights_sha256,
            config=self.config,
            voxport_version=versions.get("voxport"),
            created=_dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            packages=versions,
            meta=self.meta,
            key=self.key,
        )

    def __exit__(self, exc_type, exc, tb) -> None:
        tmp = self._tmp
        self._tmp = None
        if tmp is None:
            return
        try:
            if exc_type is not None:
                shutil.rmtree(tmp, ignore_errors=True)
                return
            try:
                (tmp / MANIFEST).write_text(json.dumps(self.manifest().to_json(), indent=2) + "\n")
                replace_dir(tmp, self.dest)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
        finally:
            self._writing.__exit__(None, None, None)


def replace_dir(src: Path, dest: Path) -> None:
    """Move `src` to `dest`, replacing an existing folder with as short a gap as renames allow."""
    if dest.exists():
        old = old_folder(dest)
        os.rename(dest, old)
        try:
            os.rename(src, dest)
        except BaseException:
            os.rename(old, dest)
            raise
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(src, dest)


def load_manifest(bundle: Path | str, verify: bool = True) -> Manifest:
    """Read a bundle's manifest; with `verify`, check every asset's content hash."""
    bundle = Path(bundle)
    path = bundle / MANIFEST
    if not bundle.is_dir():
        raise BundleNotFoundError(f"no bundle at {bundle}: run `voxport export` first")
    if not path.is_file():
        raise BundleNotFoundError(f"{bundle} has no {MANIFEST}: not a voxport bundle")
    try:
        manifest = Manifest.from_json(read_manifest_json(path), path)
        if verify:
            verify_bundle(bundle, manifest)
        else:  # no hashing, but never a link out of the bundle nor an unlisted file
            check_closed(bundle, manifest)
    except OSError as e:
        # A file this user may not read (or a failing disk): one line naming it. Not a
        # BundleIntegrityError, which `is_current` takes for a stale bundle to export over.
        raise UserError(
            f"cannot read {e.filename or bundle}: {e.strerror or e}; give this user read "
            "access to the bundle, or re-export it"
        ) from e
    return manifest


def check_closed(bundle: Path, manifest: Manifest) -> None:
    """The bundle holds only what its manifest lists, as real files and folders: no symbolic
    link anywhere in it (one would be followed out of the bundle when hashing, loading,
    lowering or sideloading), nothing but regular files and folders, and no top-level entry
    the manifest does not list (a sideload would push it). Cheap: no file is read."""
    bundle = Path(bundle)
    known = manifest.entries()
    with os.scandir(bundle) as top:
        names = sorted(e.name for e in top)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise BundleIntegrityError(
            f"{bundle}: {unknown[0]} is not listed in its manifest (a bundle holds only its "
            f"graphs, its host files and {MANIFEST}): remove it, or re-export the bundle"
        )
    for name in names:
        _check_tree(bundle, name)


def _check_tree(bundle: Path, rel: str) -> None:
    path = bundle / rel
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise BundleIntegrityError(
            f"{bundle}: {rel} is a symbolic link: a bundle holds only its own files, none "
            "linked from elsewhere; re-export the bundle"
        )
    if stat.S_ISDIR(st.st_mode):
        with os.scandir(path) as entries:
            for name in sorted(e.name for e in entries):
                _check_tree(bundle, f"{rel}/{name}")
    elif not stat.S_ISREG(st.st_mode):
        raise BundleIntegrityError(
            f"{bundle}: {rel} is not a regular file or folder; re-export the bundle"
        )


def verify_bundle(bundle: Path, manifest: Manifest) -> None:
    """Every asset's content hash and every host file's sha256, after `check_closed`."""
    check_closed(bundle, manifest)
    for name, g in manifest.graphs.items():
        asset = bundle / g["asset"]
        if not asset.exists():
            raise BundleIntegrityError(f"{bundle}: asset {g['asset']} of graph '{name}' is missing")
        actual = content_hash(asset)
        if actual != g["sha256"]:
            raise BundleIntegrityError(
                f"{bundle}: asset {g['asset']} of graph '{name}' does not match its manifest "
                f"(sha256 {actual[:12]}… != {g['sha256'][:12]}…): it was modified after export; "
                "re-export the bundle"
            )
    for fname, digest in manifest.meta.get("files", {}).items():
        f = bundle / fname
        if not (f.is_file() or f.is_dir()) or host_digest(f) != digest:
            raise BundleIntegrityError(
                f"{bundle}: file {fname} is missing or modified; re-export the bundle"
            )
