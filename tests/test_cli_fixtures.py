"""`voxport fixtures swift [--out DIR] [--check]` and the comparison it shares with
tests/test_swift_fixtures.py (`conversion.fixtures.compare.compare_fixtures`). The writer is
replaced by a tiny one here: the real write runs once, in test_swift_fixtures.py."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conversion.cli import swift_fixtures
from conversion.cli.main import main
from conversion.cli.swift_fixtures import compare_fixtures

REF = np.array([0.5, -2.0, 1.0, 0.25], dtype="<f4")  # max |ref| = 2


def _write_tree(root, f32=REF, ids=(1, 2, 3), extra: str | None = None):
    (root / "dsp").mkdir(parents=True, exist_ok=True)
    (root / "dsp" / "x.f32").write_bytes(np.asarray(f32, dtype="<f4").tobytes())
    (root / "ids.json").write_text(json.dumps({"ids": list(ids)}))
    if extra:
        (root / extra).write_text("new")
    files = {p.relative_to(root).as_posix(): p.stat().st_size for p in root.rglob("*")}
    return {k: v for k, v in sorted(files.items()) if (root / k).is_file()}


@pytest.fixture
def committed(tmp_path):
    root = tmp_path / "committed"
    _write_tree(root)
    return root


def test_identical_trees_agree(tmp_path, committed):
    _write_tree(tmp_path / "fresh")
    assert compare_fixtures(tmp_path / "fresh", committed) == []


def test_floats_within_1e6_of_the_largest_magnitude_agree(tmp_path, committed):
    moved = REF.copy()
    moved[0] += np.float32(1.5e-6)  # 0.75e-6 of max|ref| = 2 (and > 1e-6 of |0.5|)
    _write_tree(tmp_path / "fresh", f32=moved)
    assert compare_fixtures(tmp_path / "fresh", committed) == []


def test_floats_beyond_1e6_relative_differ(tmp_path, committed):
    moved = REF.copy()
    moved[3] += np.float32(4e-6)  # 2e-6 of max|ref|
    _write_tree(tmp_path / "fresh", f32=moved)
    [problem] = compare_fixtures(tmp_path / "fresh", committed)
    assert problem.startswith("dsp/x.f32: max|Δ| ") and problem.endswith(
        "beyond 1e-06 of max|ref| 2"
    )


def _spectrum_tree(root, har, rules=True):
    """Kokoro's `har` layout ([1, 2·bins, frames]: magnitudes, then phases) as a `.f32` file
    and an `.npz` member, declared polar in `compare.json` (or not)."""
    (root / "source").mkdir(parents=True, exist_ok=True)
    (root / "source" / "har.f32").write_bytes(np.asarray(har, "<f4").tobytes())
    _npz(root / "pipeline" / "vocoder_in.npz", har=np.asarray(har, np.float32))
    if rules:
        polar = {"source/har.f32": "halves", "pipeline/vocoder_in.npz:har": "halves"}
        (root / "compare.json").write_text(json.dumps({"polar": polar}))


def _har(weight_ulps: int = 0):
    """The real host's `har` for a short F0 track; `weight_ulps` moves the source's 9 -> 1
    mixing weights by that many ulps (what MKL's kernel choice does to the matmul on another
    CPU)."""
    from conversion.kokoro import host
    from conversion.kokoro.swift_fixtures import source_weights

    f0 = np.array([[0, 0, 5, 120, 130.5, 150, 180, 220, 260, 300, 310, -3, 200, 150, 9.9, 0]])
    weight, bias = source_weights()
    for _ in range(weight_ulps):
        weight = np.nextafter(weight, np.float32(np.inf)).astype(np.float32)
    draws = host.draw_source_noise(f0.shape[1], seed=3)
    return host.harmonic_source(
        f0.astype(np.float32), weight, bias, draws["rand_ini"], draws["sine_noise"]
    )


def test_a_1ulp_input_change_moves_near_zero_phases_but_not_the_spectrum(tmp_path):
    """One ulp on the mixing weights turns some near-zero bins' phases by up to 2π (plain
    float comparison fails: the CI failure on another CPU); as complex values with their
    magnitudes the two spectra agree within 1e-6."""
    ref, moved = _har(), _har(weight_ulps=1)
    _spectrum_tree(tmp_path / "committed", ref)
    _spectrum_tree(tmp_path / "fresh", moved)
    assert compare_fixtures(tmp_path / "fresh", tmp_path / "committed") == []
    _spectrum_tree(tmp_path / "plain-committed", ref, rules=False)
    _spectrum_tree(tmp_path / "plain-fresh", moved, rules=False)
    plain = compare_fixtures(tmp_path / "plain-fresh", tmp_path / "plain-committed")
    assert [p.split(":")[0] for p in plain] == ["pipeline/vocoder_in.npz", "source/har.f32"]


def test_a_real_change_of_a_strong_bin_is_caught(tmp_path):
    """A phase sign flip, or a 1e-3 relative change of its magnitude, on the strongest bin whose
    phase is off 0 and π: both differ, in the file and in the npz member."""
    ref = _har()
    flat = ref.ravel()
    n = flat.size // 2
    mags, phases = flat[:n], flat[n:]
    strong = [i for i in np.argsort(-mags) if 0.3 < abs(phases[i]) < np.pi - 0.3][0]
    flipped, scaled = flat.copy(), flat.copy()
    flipped[n + strong] = -phases[strong]
    scaled[strong] = mags[strong] * np.float32(1 + 1e-3)
    _spectrum_tree(tmp_path / "committed", ref)
    for name, changed in (("flip", flipped), ("scale", scaled)):
        _spectrum_tree(tmp_path / name, changed.reshape(ref.shape))
        got = compare_fixtures(tmp_path / name, tmp_path / "committed")
        assert [g.split(":")[0] for g in got] == ["pipeline/vocoder_in.npz", "source/har.f32"]
        assert all("max|Δ(m·e^iφ)|" in g for g in got), got


def test_phases_declared_with_a_magnitude_file(tmp_path):
    """`{"x_phase.f32": "x_mag.f32"}`: a phase compared with its magnitude array, so a phase
    where the magnitude is zero may be anything, and one where it is not may not."""
    mag = np.array([0.0, 2.0, 1.0], "<f4")
    for name, phase in (
        ("committed", [np.pi, 0.5, -1.0]),
        ("cut", [-np.pi, 0.5, -1.0]),  # the zero bin's angle: +π on one CPU, -π on another
        ("off", [np.pi, -0.5, -1.0]),  # a sign flip on a strong bin
    ):
        root = tmp_path / name / "dsp"
        root.mkdir(parents=True)
        (root / "x_mag.f32").write_bytes(mag.tobytes())
        (root / "x_phase.f32").write_bytes(np.asarray(phase, "<f4").tobytes())
        (root / "compare.json").write_text(json.dumps({"polar": {"x_phase.f32": "x_mag.f32"}}))
    assert compare_fixtures(tmp_path / "cut", tmp_path / "committed") == []
    [problem] = compare_fixtures(tmp_path / "off", tmp_path / "committed")
    assert problem.startswith("dsp/x_phase.f32: max|Δ(m·e^iφ)| 1.92")


def test_integers_and_text_must_match_exactly(tmp_path, committed):
    _write_tree(tmp_path / "fresh", ids=(1, 2, 4))
    assert compare_fixtures(tmp_path / "fresh", committed) == ["ids.json: differs"]


def _npz(path, **arrays):
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **arrays)


def test_npz_members_follow_the_same_rule(tmp_path):
    """Float members within 1e-6 of their largest magnitude (an .npz's bytes differ whenever a
    float does: another machine's SIMD path); integers, names, dtypes and shapes exactly."""
    ref = {"har": np.array([3.1415927, -1.0, 0.5], np.float32), "n": np.array([7], np.int32)}
    _npz(tmp_path / "committed" / "v.npz", **ref)
    cases = {
        "close": ({**ref, "har": ref["har"] + np.float32(4.8e-7)}, []),
        "far": ({**ref, "har": ref["har"] + np.float32(1e-5)}, ["v.npz: har: max|Δ| "]),
        "int": ({**ref, "n": np.array([8], np.int32)}, ["v.npz: n: differs"]),
        "shape": ({**ref, "n": np.array([7, 7], np.int32)}, ["v.npz: n: int32[2] != int32[1]"]),
        "names": ({"har": ref["har"]}, ["v.npz: arrays ['har'] != ['har', 'n']"]),
    }
    for name, (arrays, want) in cases.items():
        _npz(tmp_path / name / "v.npz", **arrays)
        got = compare_fixtures(tmp_path / name, tmp_path / "committed")
        assert len(got) == len(want), (name, got)
        assert all(g.startswith(w) for g, w in zip(got, want, strict=True)), (name, got)


def test_added_and_removed_files_are_named(tmp_path, committed):
    _write_tree(tmp_path / "fresh", extra="new.json")
    (committed / "gone.txt").write_text("old")
    assert compare_fixtures(tmp_path / "fresh", committed) == [
        f"new.json: missing from {committed}",
        "gone.txt: no longer written",
    ]


def test_fixtures_swift_writes_and_prints_what_it_wrote(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(swift_fixtures, "write_fixtures", _write_tree)
    out = tmp_path / "out"
    assert main(["fixtures", "swift", "--out", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert any(line.endswith(str(out / "dsp" / "x.f32")) for line in printed)
    assert printed[-1] == f"wrote 2 files, 34 bytes, to {out}"
    assert (out / "ids.json").is_file()


def test_fixtures_swift_check(tmp_path, monkeypatch, capsys, committed):
    monkeypatch.setattr(swift_fixtures, "write_fixtures", _write_tree)
    assert main(["fixtures", "swift", "--check", "--out", str(committed)]) == 0
    assert "current" in capsys.readouterr().out
    (committed / "ids.json").write_text(json.dumps({"ids": [9]}))
    assert main(["fixtures", "swift", "--check", "--out", str(committed)]) == 1
    printed = capsys.readouterr().out
    assert "1 file(s) differ" in printed and "  ids.json: differs" in printed
    assert json.loads((committed / "ids.json").read_text()) == {"ids": [9]}  # left as it was


def test_fixtures_check_without_fixtures_is_exit_2(tmp_path, capsys):
    assert main(["fixtures", "swift", "--check", "--out", str(tmp_path / "none")]) == 2
    assert "no fixtures at" in capsys.readouterr().err
