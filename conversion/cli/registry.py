"""The CLI's model registry: the only place that imports a model folder (lazily, by name).

Models are found by folder: each folder of `conversion/` whose `__init__.py` says
``MODEL_NAME`` is one (its `__init__` imports nothing, so finding them loads no model). Each TTS
model has `conversion/<name>/port.py` (a `ModelPort` instance, `PORT`) and
`conversion/<name>/cli.py` (its flags and verbs, `ModelCommands`); both are checked against
the contract when the registry first loads them. `core` is the toolkit's self-test: verbs
only, no weights (`conversion/selftest/cli.py`).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import pkgutil
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from conversion.core.errors import UserError
from conversion.core.port import ModelCommands, ModelPort, check_port

from .verbs import PORT_VERBS

# Verbs that take a model; `phonemize` (text -> the phoneme chunks a device host speaks) is
# offered by the models with a G2P of their own.
ALL_VERBS = ("export", "speak", "gate", "bench", "phonemize", "tokenize", "voice")
# What a port's CLI module turns its own flags into, for the verbs every port has (verbs.py).
OPTION_HOOKS = ("speak_options", "gate_options", "bench_options")


@dataclass(frozen=True)
class ModelEntry:
    """A model the CLI knows by name; what it is (summary, graphs, ...) its port says."""

    name: str
    package: str
    has_port: bool = True
    # The on-device benches of VoxportKit's voxport-bench (VP_BENCH) that run this model.
    benches: tuple[str, ...] = ()

    @property
    def commands_module(self) -> str:
        return f"{self.package}.cli"

    @property
    def has_mutants(self) -> bool:
        """The model lists deliberate faults for `gate --mutants` (its `mutants.py`)."""
        return importlib.util.find_spec(f"{self.package}.mutants") is not None

    @property
    def fixtures_module(self) -> str:
        """The model's writer of the Swift package's fixtures (`ios/Tests/Fixtures/<name>/`)."""
        return f"{self.package}.swift_fixtures"

    @property
    def has_swift_fixtures(self) -> bool:
        """The model's Swift host has fixtures of its own (its `swift_fixtures.py`)."""
        return importlib.util.find_spec(self.fixtures_module) is not None


def _model_folders() -> dict[str, ModelEntry]:
    """Every folder of `conversion/` whose package declares ``MODEL_NAME`` (and its
    ``DEVICE_BENCHES``): a model is added by adding its folder, with no list to edit. The
    self-test (``core``) first, then the models by name; a port is ``port.py`` beside it."""
    import conversion

    found: dict[str, ModelEntry] = {}
    for info in sorted(pkgutil.iter_modules(conversion.__path__), key=lambda i: i.name):
        if not info.ispkg:
            continue
        package = f"conversion.{info.name}"
        declared = importlib.import_module(package)
        name = getattr(declared, "MODEL_NAME", None)
        if name is None:
            continue
        if name in found:
            raise TypeError(f"{package}: MODEL_NAME '{name}' is also {found[name].package}'s")
        has_port = importlib.util.find_spec(f"{package}.port") is not None
        benches = tuple(getattr(declared, "DEVICE_BENCHES", ()))
        found[name] = ModelEntry(name, package, has_port=has_port, benches=benches)
    return dict(sorted(found.items(), key=lambda kv: (kv[1].has_port, kv[0])))


MODELS: dict[str, ModelEntry] = _model_folders()


def names() -> list[str]:
    return list(MODELS)


def resolve(name: str) -> ModelEntry:
    """The entry for `name`; `audio8-tts` and `Audio8_TTS` both name `audio8_tts`."""
    key = name.strip().lower().replace("-", "_")
    if key not in MODELS:
        raise UserError(f"unknown model '{name}': choose one of {', '.join(MODELS)}")
    return MODELS[key]


def port(name: str) -> ModelPort:
    """The model's port, checked against the contract."""
    entry = resolve(name)
    if not entry.has_port:
        raise UserError(f"model '{entry.name}' has no weights or bundle of its own")
    where = f"{entry.package}.port"
    found = check_port(getattr(importlib.import_module(where), "PORT", None), where)
    if found.name != entry.name:
        raise TypeError(f"{where}: PORT says '{found.name}', the registry '{entry.name}'")
    return found


def commands(name: str) -> ModuleType:
    """The model's CLI module, checked: its VERBS exist, add_arguments is there."""
    entry = resolve(name)
    mod = importlib.import_module(entry.commands_module)
    if not isinstance(mod, ModelCommands):
        raise TypeError(f"{entry.commands_module}: needs VERBS and add_arguments(verb, parser)")
    missing = [v for v in mod.VERBS if not callable(getattr(mod, v, None))]
    if missing:
        raise TypeError(f"{entry.commands_module}: VERBS lists {missing} but defines none")
    if entry.has_port:
        port(name)
        lacking = [f for f in OPTION_HOOKS if not callable(getattr(mod, f, None))]
        if lacking:
            raise TypeError(f"{entry.commands_module}: needs {', '.join(lacking)}(args, config)")
    return mod


def swift_fixture_writer(name: str) -> Callable[[Path, Callable[[], AbstractContextManager]], None]:
    """The model's `write_fixtures(root, zip_clock)`: writes its Swift host's fixtures under
    `root`; `zip_clock()` pins the clock np.savez stamps zip members with."""
    entry = resolve(name)
    if not entry.has_swift_fixtures:
        raise UserError(f"model '{entry.name}' writes no Swift fixtures")
    return importlib.import_module(entry.fixtures_module).write_fixtures


def doctor():
    """`voxport doctor`: the self-test's pre-flight (versions, pins, an export + run)."""
    return importlib.import_module("conversion.selftest.doctor").doctor


def offered(name: str) -> tuple[str, ...]:
    """The verbs `name` offers: its CLI module's, and those every port gets (`PORT_VERBS`)."""
    entry = resolve(name)
    own = commands(name).VERBS
    return (*(v for v in PORT_VERBS if entry.has_port and v not in own), *own)


def verb(name: str, verb_name: str):
    """The callable implementing `voxport VERB MODEL`, or a UserError saying why there is none."""
    entry = resolve(name)
    mod = commands(name)
    if verb_name in mod.VERBS:
        return getattr(mod, verb_name)
    if entry.has_port and verb_name in PORT_VERBS:
        return functools.partial(PORT_VERBS[verb_name], port(name), mod)
    raise UserError(
        f"model '{entry.name}' has no '{verb_name}' (it offers: {', '.join(offered(name))})"
    )
