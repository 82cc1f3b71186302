"""The CLI's model registry: the only place that imports a model folder (lazily).

A model's CLI module (`conversion.<model>.cli`) exposes any of `export(args)`, `gate(args)`,
`speak(args)`, `bench(args)`; each returns an exit code. Models listed without a module are
planned, and say which issue tracks them.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

from .errors import UserError


@dataclass(frozen=True)
class ModelEntry:
    name: str
    summary: str
    module: str | None
    tracked_in: str | None = None


MODELS: dict[str, ModelEntry] = {
    e.name: e
    for e in (
        ModelEntry(
            "core",
            "the toolkit's self-test graphs (conv, MLP, KV decoder)",
            "conversion.core.selftest",
        ),
        ModelEntry("kokoro", "Kokoro-82M (StyleTTS2 + iSTFTNet)", "conversion.kokoro.cli"),
        ModelEntry("chatterbox", "Chatterbox (T3 + S3Gen + HiFT)", "conversion.chatterbox.cli"),
        ModelEntry("audio8-tts", "Audio8-TTS-Preview-0.6b (DualAR)", "conversion.audio8_tts.cli"),
    )
}


def names() -> list[str]:
    return list(MODELS)


def resolve(name: str) -> ModelEntry:
    key = name.strip().lower().replace("_", "-")
    if key not in MODELS:
        raise UserError(f"unknown model '{name}': choose one of {', '.join(MODELS)}")
    return MODELS[key]


def verb(name: str, verb_name: str):
    """The callable implementing `voxport VERB MODEL`, or a UserError saying why there is none."""
    entry = resolve(name)
    if entry.module is None:
        raise UserError(f"model '{entry.name}' is not ported yet ({entry.tracked_in})")
    mod: ModuleType = importlib.import_module(entry.module)
    fn = getattr(mod, verb_name, None)
    if fn is None:
        raise UserError(
            f"model '{entry.name}' has no '{verb_name}' (it offers: "
            + ", ".join(v for v in ("export", "gate", "speak", "bench") if hasattr(mod, v))
            + ")"
        )
    return fn
