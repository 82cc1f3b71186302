"""Kokoro's configurations: the published bucket tables, and the reduced ones CI gates with.

The architecture itself is the publisher's `config.json` beside this file (not shipped in the
`kokoro` package); a configuration here only picks which buckets a bundle exports.
"""

from __future__ import annotations

from dataclasses import dataclass

from conversion.core.errors import UserError
from conversion.core.host.buckets import BucketTable

from .graphs import BUCKETS


@dataclass(frozen=True)
class KokoroConfig:
    name: str
    buckets: dict[str, BucketTable]

    def to_json(self) -> dict:
        return {"name": self.name, "buckets": {g: t.to_json() for g, t in self.buckets.items()}}


PUBLISHED = KokoroConfig("published", dict(BUCKETS))
# The reduced configuration CI gates with the real weights: the small buckets only. "Hello."
# (8 ids, ~50 frames) runs at L64; the second vocoder bucket proves bucket invariance in CI
# and holds a short demo sentence.
REDUCED = KokoroConfig(
    "reduced",
    {
        "predictor": BucketTable.one_dim("T", [32]),
        "prosody": BucketTable([{"T": 32, "L": 128}]),
        "vocoder": BucketTable.one_dim("L", [64, 128]),
    },
)
CONFIGS = {c.name: c for c in (PUBLISHED, REDUCED)}


def by_name(name: str) -> KokoroConfig:
    if name not in CONFIGS:
        raise UserError(f"kokoro has no config '{name}': choose one of {', '.join(CONFIGS)}")
    return CONFIGS[name]
