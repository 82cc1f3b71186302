"""The model contract: what every model port declares, and the one rule that finds its bundle.

A model folder implements `ModelPort` once (`conversion/<name>/port.py`, an instance named
`PORT`: the export half, and the hooks of the speak half, `core/speak.py`, and of the gate and
bench half, `core/runs.py`) and its command-line
flags once (`conversion/<name>/cli.py`, `ModelCommands`); the registry checks both on import.
Everything that names, finds or reuses a bundle lives here, so `export`, `speak`, `gate` and
`bench` of every model agree on it:

- one name per model, spelled the same in the folder, the registry, the manifest, the bundle
  path and the CLI (`kokoro`, `chatterbox`, `audio8_tts`);
- the default bundle folder: `bundles/{name}-{dtype}`, then `-{config}` unless the config is
  the published one, then `-seed{N}` for seeded random weights (each weights seed its own
  folder: a sweep revisiting a seed reuses it, two seeds never replace each other's), then
  `-{variant}` for a graph or bucket subset (e.g. a gate's);
- the reuse key (`BundleKey`): everything that changes the graphs — model, weights sha256,
  the configuration's sizes and bucket tables, each graph's precision, and which graphs. A
  bundle whose manifest records the same key is reused; any difference re-exports it.
"""

from __future__ import annotations

import json
import os
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from conversion.core import bundle_lock, hub
from conversion.core.bundle import (
    FORMAT,
    MANIFEST,
    is_bundle_folder,
    key_differences,
    key_digest,
    load_manifest,
)
from conversion.core.errors import BundleIntegrityError, BundleNotFoundError, UserError
from conversion.core.weights_folder import cache_dir, folder_problem, read_manifest

if TYPE_CHECKING:  # the export (and torch) loads with a port's export, not with the CLI
    from conversion.core.bundle_source import BundleSource
    from conversion.core.export.program import AssetInfo
    from conversion.core.runs import BenchRun, GateRun
    from conversion.core.speak import SpeakingPipeline

BUNDLES_DIR = Path("bundles")
PUBLISHED = "published"
DTYPES = ("fp32", "fp16", "int8")


@dataclass(frozen=True)
class ExportJob:
    """One export a port carries out: the graphs `key` names, at its precisions, into `dest`
    (atomically), with `key` recorded in the manifest. `loaded` is the model already in
    memory, if any (a gate that ran the oracle has it)."""

    folder: Path
    config: Any
    dest: Path
    key: BundleKey
    dtype: str
    overwrite: bool
    loaded: Any = None


@dataclass(frozen=True)
class BundleKey:
    """What a bundle was made from; equal keys mean the same graphs and the same host files."""

    model: str
    weights_sha256: str
    config: dict[str, Any]
    graphs: dict[str, str]  # graph -> precision, for exactly the graphs the bundle holds
    layout: int = 1  # the port's bundle layout: which host files travel with the graphs

    def to_json(self) -> dict[str, Any]:
        """The key as the manifest stores it (through JSON: tuples become lists), so a key
        read back from a manifest compares equal to the one computed now."""
        raw = {
            "model": self.model,
            "weights_sha256": self.weights_sha256,
            "config": self.config,
            "graphs": self.graphs,
            "layout": self.layout,
        }
        return json.loads(json.dumps(raw, sort_keys=True))

    @property
    def digest(self) -> str:
        return key_digest(self.to_json())


class ModelPort(ABC):
    """One model: its name, configurations, weights, graphs, export and bundle reuse.

    Subclasses set the class attributes and implement the abstract methods; `ensure_bundle`
    and `bundle_path` are the shared rule and are not overridden.
    """

    name: ClassVar[str]
    summary: ClassVar[str]
    graphs: ClassVar[tuple[str, ...]]
    asset_info: ClassVar[AssetInfo]
    configs: ClassVar[tuple[str, ...]] = (PUBLISHED, "reduced")
    # Raised when a port changes what host files its bundles carry, so older bundles (complete
    # graphs, missing files) are re-exported rather than reused.
    layout: ClassVar[int] = 1
    # `--weights OWNER/NAME`: the publisher's hub repo and the files its loader reads (globs).
    hub_repo: ClassVar[str | None] = None
    hub_files: ClassVar[tuple[str, ...]] = ()

    # -- what each model provides -------------------------------------------------------------

    @abstractmethod
    def config(self, name: str) -> Any:
        """The configuration object for a `--config` name."""

    def config_json(self, config: Any) -> dict[str, Any]:
        """What of `config` changes the graphs (sizes, bucket tables), as JSON."""
        return config.to_json()

    @abstractmethod
    def resolve_weights(self, spec: str | Path | None, config: Any, seed: int) -> Path:
        """The snapshot folder for `--weights` (a folder, 'random', or the model's default)."""

    @abstractmethod
    def weights_sha256(self, folder: Path) -> str:
        """One hash over the snapshot's checkpoint files: what a bundle was exported from."""

    def is_random(self, folder: Path) -> bool:
        """True when the snapshot holds seeded random weights (its audio is noise): the
        snapshot's own manifest says so."""
        manifest = read_manifest(folder) or {}
        return bool(manifest.get("random") or manifest.get("source") == "random")

    @abstractmethod
    def graph_precisions(self, dtype: str) -> dict[str, str]:
        """Each graph's precision in a bundle of `dtype` (a bundle may mix precisions)."""

    @abstractmethod
    def export_bundle(self, job: ExportJob) -> Path:
        """Carry out `job`; the bundle folder."""

    # -- the speak half (conversion/core/speak.py): what `voxport speak MODEL` places --------

    # At most this many workers help one utterance (None: as many as asked).
    max_speak_workers: ClassVar[int | None] = None
    # Whether `speak` gives each word's time (`SpeakResult.words`; `voxport speak --timings`).
    word_timings: ClassVar[bool] = False

    @abstractmethod
    def open_pipeline(self, bundle: Path, isolate: bool) -> SpeakingPipeline:
        """The model's loaded pipeline over `bundle` (its runtime in a child when `isolate`)."""

    def options_for_weights(self, options: Any, folder: Path, config: Any) -> Any:
        """`options` completed and checked against the snapshot (e.g. a voice pack it
        carries), before any export; by default as they are."""
        return options

    def options_for_pipeline(
        self, options: Any, pipeline: SpeakingPipeline, folder: Path, config: Any
    ) -> Any:
        """`options` completed with what needs the loaded pipeline or the weights in memory
        (e.g. a voice cloned from a reference clip); by default as they are."""
        return options

    # -- the gate and bench half (conversion/core/runs.py): `voxport gate|bench MODEL` --------

    # `gate --plot` draws the gate utterance's waveforms (else refused, never ignored).
    gate_plots: ClassVar[bool] = False

    @abstractmethod
    def load_model(self, folder: Path, config: Any) -> Any:
        """The snapshot in memory: what the gate's oracle runs and the export converts."""

    def model_for(self, job: ExportJob) -> Any:
        """What `job` exports from: the model already in memory, else loaded now."""
        return job.loaded if job.loaded is not None else self.load_model(job.folder, job.config)

    def check_bundles(self, source: BundleSource, config: Any, dtype: str) -> None:
        """The gate's and bench's bundles, each refused now when it is a `--bundle` made from
        other arguments (before the model loads); by default the main bundle alone."""
        source.check(config, dtype)

    @abstractmethod
    def run_gate(self, run: GateRun) -> int:
        """The ladder against the oracle: 0 when every rung passes, else 1."""

    def run_mutants(self, run: GateRun) -> Any:
        """The kill table (`gates.mutants.KillTable`) of `run.mutants`, the faults chosen from
        the model's catalogue (its `mutants.py`)."""
        raise UserError(f"{self.name} has no fault catalogue: --mutants is for a model with one")

    @abstractmethod
    def run_bench(self, run: BenchRun) -> int:
        """Speed and memory of the bundle (and the publisher's eager model, like for like)."""

    # -- the shared rule ------------------------------------------------------------------------

    def cached_random_snapshot(
        self, config_name: str, seed: int, write: Callable[[Path], Any]
    ) -> Path:
        """`--weights random`: seeded random weights in the publisher's layout, written once by
        `write(folder)` into the model's cache and reused while intact."""
        print(
            f"{self.name}: --weights random: seeded random weights at the {config_name} "
            "configuration; the audio will be noise",
            file=sys.stderr,
        )
        folder = cache_dir(self.name) / f"random-{config_name}-seed{seed}"
        if folder_problem(folder, full=False) is not None:
            write(folder)
        return folder

    def resolve(self, spec: str | Path | None, config_name: str, seed: int) -> tuple[Path, Any]:
        """`--weights`, `--config` and the weights seed: the snapshot folder and the config."""
        config = self.config(config_name)
        return self.resolve_weights(self.local_weights(spec), config, seed), config

    def local_weights(self, spec: str | Path | None) -> str | Path | None:
        """A hub id (`owner/name`, not a folder here) becomes its snapshot folder in the hub
        cache, fetched with only `hub_files`; anything else is returned as it is."""
        if not hub.is_hub_id(spec):
            return spec
        return hub.snapshot(str(spec), self.hub_files or ("*",))

    def bundle_key(
        self,
        folder: Path,
        config: Any,
        dtype: str,
        graphs: Sequence[str] | None = None,
        precisions: dict[str, str] | None = None,
    ) -> BundleKey:
        """The key of the bundle for these weights, config, dtype and graph subset."""
        if dtype not in DTYPES:
            raise UserError(f"unknown dtype '{dtype}': choose one of {', '.join(DTYPES)}")
        chosen = tuple(graphs or self.graphs)
        unknown = sorted(set(chosen) - set(self.graphs))
        if unknown:
            raise UserError(f"{self.name} has no graph {unknown}: it has {list(self.graphs)}")
        per_graph = {**self.graph_precisions(dtype), **(precisions or {})}
        return BundleKey(
            self.name,
            self.weights_sha256(folder),
            self.config_json(config),
            {g: per_graph[g] for g in chosen},
            self.layout,
        )

    def weights_tag(self, folder: Path) -> str | None:
        """What names seeded random weights in a bundle folder: `seed{N}` from the snapshot's
        manifest (`w{sha256[:12]}` if it lacks the seed); None for real weights."""
        if not self.is_random(folder):
            return None
        seed = (read_manifest(folder) or {}).get("seed")
        if isinstance(seed, int) and not isinstance(seed, bool):
            return f"seed{seed}"
        return f"w{self.weights_sha256(folder)[:12]}"

    def bundle_path(
        self,
        config_name: str,
        dtype: str,
        variant: str | None = None,
        weights_tag: str | None = None,
    ) -> Path:
        """The default folder: `bundles/{name}-{dtype}[-{config}][-{weights_tag}][-{variant}]`
        (`weights_tag`: `weights_tag(folder)`, e.g. `seed0` for random weights at seed 0)."""
        parts = [self.name, dtype]
        if config_name != PUBLISHED:
            parts.append(config_name)
        if weights_tag:
            parts.append(weights_tag)
        if variant:
            parts.append(variant)
        return BUNDLES_DIR / "-".join(parts)

    def is_current(self, bundle: Path, key: BundleKey) -> bool:
        """True when `bundle` holds intact graphs made from exactly `key`."""
        return self._verified_key(bundle) == key.to_json()

    @staticmethod
    def _verified_key(bundle: Path) -> dict | None:
        """The key of the intact bundle at `bundle`; None when there is none, or it is broken."""
        try:
            return load_manifest(bundle).key
        except (BundleNotFoundError, BundleIntegrityError):
            return None

    def ensure_bundle(
        self,
        folder: Path,
        config: Any,
        config_name: str,
        dtype: str,
        path: Path | None = None,
        graphs: Sequence[str] | None = None,
        precisions: dict[str, str] | None = None,
        variant: str | None = None,
        loaded: Any = None,
        overwrite: bool = False,
    ) -> Path:
        """The bundle for these arguments: reused when current, else exported (once, also when
        two processes ask for it at the same time: the second waits and reuses it).

        The default folder (`bundle_path`, `bundles/…`) is voxport's own: a bundle there made
        from other arguments is re-exported. A `path` given (`--bundle`) is the user's: one
        that fails its verification, or is no bundle, is refused and left as it is; an intact
        bundle there made from other arguments is re-exported only with `overwrite`
        (`--overwrite`), else refused in one line naming what differs (a `--bundle` that
        names the default folder itself is voxport's own).

        The process that asked holds the folder until it exits (`bundle_lock`: a gate, a bench
        or a speak uses its bundles from first to last call, between sessions too), so no other
        process replaces it meanwhile; every session it opens there checks that the folder
        still holds `key`'s graphs."""
        key = self.bundle_key(folder, config, dtype, graphs, precisions)
        default = self.bundle_path(config_name, dtype, variant, self.weights_tag(folder))
        # --bundle: the user's folder, never exported over if broken, nor without --overwrite
        given = path is not None and not _same_folder(path, default)
        path = Path(path) if path is not None else default
        bundle_lock.expect(path, key.to_json())
        # A --bundle that fails its verification is refused (one hash of it, the first).
        current = check_replaceable if given else self._verified_key
        use = bundle_lock.Use(path)  # checked while held: no writer between check and use
        try:
            have = current(path)
        except BaseException:
            use.release()
            raise
        if have == key.to_json():
            bundle_lock.keep(use)
            return path
        use.release()
        if given and not overwrite and have is not None:
            raise UserError(other_arguments(path, have, key.to_json()))
        with bundle_lock.writing(path, self.name):
            have = current(path)
            if have != key.to_json():  # else exported while this process waited
                if given and not overwrite and have is not None:  # written while it waited
                    raise UserError(other_arguments(path, have, key.to_json()))
                if (path / "manifest.json").exists():
                    # Named: a layout change (new host files) re-exports a bundle as well.
                    why = f" ({key_differences(have, key.to_json())})" if have else ""
                    print(
                        f"{self.name}: {path} was exported from other weights, sizes, "
                        f"precisions or bundle layout{why}: re-exporting",
                        file=sys.stderr,
                    )
                self.export_bundle(ExportJob(folder, config, path, key, dtype, True, loaded))
            bundle_lock.keep(bundle_lock.Use(path))  # taken before the write lock is let go
        return path

    def check_reuse(
        self,
        folder: Path,
        config: Any,
        config_name: str,
        dtype: str,
        path: Path | None,
        overwrite: bool,
        graphs: Sequence[str] | None = None,
        precisions: dict[str, str] | None = None,
        variant: str | None = None,
    ) -> None:
        """`ensure_bundle`'s refusal of a `--bundle` made from other arguments, said before the
        weights load (a gate loads its model and runs its oracle before it asks for a bundle):
        the bundle's manifest is read, not hashed. Anything else (nothing there, a broken
        bundle) is left to `ensure_bundle`, which verifies it."""
        if path is None or overwrite:
            return
        default = self.bundle_path(config_name, dtype, variant, self.weights_tag(folder))
        if _same_folder(path, default):
            return
        try:
            have = load_manifest(path, verify=False).key
        except UserError:
            return
        want = self.bundle_key(folder, config, dtype, graphs, precisions).to_json()
        if have != want:
            raise UserError(other_arguments(Path(path), have, want))

    def export(
        self,
        folder: Path,
        config: Any,
        dest: Path,
        dtype: str,
        overwrite: bool,
        loaded: Any = None,
    ) -> Path:
        """`voxport export`: every graph at `dtype` into `dest`, keyed for later reuse."""
        key = self.bundle_key(folder, config, dtype)
        bundle_lock.expect(dest, key.to_json())
        return self.export_bundle(ExportJob(folder, config, dest, key, dtype, overwrite, loaded))


def _same_folder(a: Path | str, b: Path | str) -> bool:
    """Whether two paths name one folder, by resolved identity (links, `..`, `./`)."""
    return os.path.realpath(a) == os.path.realpath(b)


def other_arguments(path: Path, have: dict, want: dict) -> str:
    """The one line refusing a `--bundle` made from other arguments (no `--overwrite`)."""
    return (
        f"--bundle {path} holds a bundle made from other arguments "
        f"({key_differences(have, want)}): pass --overwrite to re-export it there, or give "
        "another --bundle (or none: the default bundles/ folder is re-exported as needed)"
    )


def check_replaceable(path: Path) -> dict | None:
    """The key of the intact bundle a `--bundle` folder holds (None: nothing there yet). It
    may be re-exported over only when it is an intact bundle made from other arguments (other
    weights, sizes or precisions): one that fails its verification (a tampered, linked or
    hand-edited bundle) or is no bundle at all is refused, naming why."""
    if not (path.exists() or path.is_symlink()):
        return None
    if not is_bundle_folder(path):
        raise UserError(
            f"--bundle {path} is not a voxport bundle (no {MANIFEST} of format {FORMAT}): it "
            "is left as it is; give another --bundle, or remove it"
        )
    try:
        return load_manifest(path, verify=True).key
    except BundleIntegrityError as e:
        raise UserError(
            f"--bundle {path} fails its verification, so it is not exported over: {e}"
        ) from None


@runtime_checkable
class ModelCommands(Protocol):
    """A model's CLI module: its own flags, and the verbs it offers (each returns an exit code).

    `add_arguments(verb, parser)` adds the model's own options to a verb's parser; the
    registry checks on import that every listed verb is a function of the module, and that a
    model with a port has `speak_options`, `gate_options` and `bench_options(args, config)`:
    each verb's own flags as the model's options, checked (a bad flag fails before any weights
    load). `export`, `speak`, `gate` and `bench` are every port's (`conversion/cli/verbs.py`).
    """

    VERBS: tuple[str, ...]

    def add_arguments(self, verb: str, parser: Any) -> None: ...


def check_port(port: object, where: str) -> ModelPort:
    """`port` implements the contract completely, or an error naming what is missing."""
    if not isinstance(port, ModelPort):
        raise TypeError(f"{where}: PORT is not a conversion.core.port.ModelPort")
    missing = [a for a in ("name", "summary", "graphs", "asset_info") if not hasattr(port, a)]
    if missing:
        raise TypeError(f"{where}: PORT lacks {missing}")
    if not port.name.isidentifier() or port.name != port.name.lower():
        raise TypeError(f"{where}: model name '{port.name}' must be a lower-case identifier")
    if not where.endswith(f".{port.name}.port"):
        raise TypeError(f"{where}: a port must live in conversion/{port.name}/port.py")
    return port
