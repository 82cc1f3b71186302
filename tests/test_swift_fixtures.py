"""The Swift package's fixtures are what the Python code writes today: regenerated and held
against the committed ones, so the two hosts cannot drift apart. Integers and text exactly;
float32 arrays within 1e-6 of their largest magnitude (machines differ in SIMD paths)."""

from pathlib import Path

import numpy as np

from conversion.swift_fixtures import write_fixtures

COMMITTED = Path(__file__).resolve().parents[1] / "ios" / "Tests" / "Fixtures"


def _files(root: Path) -> dict[str, Path]:
    return {p.relative_to(root).as_posix(): p for p in root.rglob("*") if p.is_file()}


def test_committed_swift_fixtures_are_current(tmp_path):
    write_fixtures(tmp_path)
    fresh, committed = _files(tmp_path), _files(COMMITTED)
    assert sorted(fresh) == sorted(committed), "run: python -m conversion.swift_fixtures " + str(
        COMMITTED
    )
    for rel, path in fresh.items():
        new, old = path.read_bytes(), committed[rel].read_bytes()
        if new == old:
            continue
        assert rel.endswith(".f32") and len(new) == len(old), f"{rel} differs"
        a, b = np.frombuffer(new, "<f4"), np.frombuffer(old, "<f4")
        scale = float(np.abs(b).max()) or 1.0
        assert float(np.abs(a - b).max()) <= 1e-6 * scale, f"{rel}: beyond 1e-6 relative"
