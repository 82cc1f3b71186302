"""Static buckets: pick the smallest that fits, pad to it, mask the pad, trim the output.

The converter and the device compile static shapes best, so a variable length rides a small
table of fixed sizes. A bucket is a mapping of named dimensions to sizes ({"T": 128, "L": 512});
inputs longer than the largest bucket are an error the caller answers by splitting.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from conversion.core.errors import BucketOverflowError, UserError


class Bucket(dict):
    """Named static sizes, e.g. Bucket(T=128, L=512). Hashable and ordered by name."""

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted(self.items())))

    @property
    def label(self) -> str:
        """A name fit for an entrypoint: T128_L512."""
        return "_".join(f"{k}{v}" for k, v in sorted(self.items()))

    @property
    def volume(self) -> int:
        return int(np.prod(list(self.values()))) if self else 0


class BucketTable:
    """An ordered set of buckets over the same dimension names."""

    def __init__(self, buckets: Iterable[Mapping[str, int]]) -> None:
        self.buckets = [Bucket(b) for b in buckets]
        if not self.buckets:
            raise UserError("a bucket table needs at least one bucket")
        dims = {tuple(sorted(b)) for b in self.buckets}
        if len(dims) != 1:
            raise UserError(f"buckets must share dimension names, got {sorted(dims)}")
        self.dims: tuple[str, ...] = next(iter(dims))
        self.buckets.sort(key=lambda b: (b.volume, tuple(b[d] for d in self.dims)))

    @classmethod
    def one_dim(cls, name: str, sizes: Sequence[int]) -> BucketTable:
        return cls({name: s} for s in sizes)

    def limits(self) -> dict[str, int]:
        return {d: max(b[d] for b in self.buckets) for d in self.dims}

    def select(self, **needs: int) -> Bucket:
        """The smallest bucket (by volume) holding every needed size."""
        unknown = set(needs) - set(self.dims)
        if unknown or set(needs) != set(self.dims):
            raise UserError(f"bucket needs sizes for {list(self.dims)}, got {sorted(needs)}")
        for d, n in needs.items():
            if n < 1:
                raise UserError(f"{d} = {n}: nothing to run (a length must be at least 1)")
        for b in self.buckets:
            if all(needs[d] <= b[d] for d in self.dims):
                return b
        over = {d: n for d, n in needs.items() if n > self.limits()[d]}
        detail = ", ".join(f"{d} = {n} > {self.limits()[d]}" for d, n in over.items())
        if not over:
            detail = f"no single bucket holds {needs}"
        raise BucketOverflowError(
            f"input too long for the largest bucket ({detail}); split the input "
            f"(buckets: {[b.label for b in self.buckets]})"
        )

    def __iter__(self):
        return iter(self.buckets)

    def __len__(self) -> int:
        return len(self.buckets)

    def to_json(self) -> list[dict[str, int]]:
        return [dict(b) for b in self.buckets]


def pad_to(x: np.ndarray, size: int, axis: int = -1, value: float = 0) -> np.ndarray:
    """Right-pad `x` along `axis` to `size` with `value` (never truncates)."""
    n = x.shape[axis]
    if n > size:
        raise BucketOverflowError(f"length {n} exceeds the bucket size {size} on axis {axis}")
    widths = [(0, 0)] * x.ndim
    widths[axis] = (0, size - n)
    return np.pad(x, widths, constant_values=value)


def length_mask(real: int, size: int, dtype=np.float32) -> np.ndarray:
    """[size] with 1 on the first `real` positions, 0 on the pad."""
    if real > size:
        raise BucketOverflowError(f"real length {real} exceeds the bucket size {size}")
    return (np.arange(size) < real).astype(dtype)


def trim(y: np.ndarray, real: int, axis: int = -1) -> np.ndarray:
    """Keep the first `real` positions of `y` along `axis`."""
    return np.take(y, np.arange(real), axis=axis)


def padding_waste(real_sizes: Iterable[Mapping[str, int]], table: BucketTable) -> float:
    """Fraction of bucket volume spent on padding for a set of inputs."""
    used = total = 0
    for needs in real_sizes:
        b = table.select(**needs)
        used += int(np.prod(list(needs.values())))
        total += b.volume
    return 1.0 - used / total if total else 0.0
