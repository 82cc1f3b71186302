"""The Swift package's fixtures are what the Python code writes today: regenerated and held
against the committed ones, so the two hosts cannot drift apart. Integers and text exactly;
float32 arrays within 1e-6 of their largest magnitude, declared spectra as complex values
(machines differ in SIMD paths) — the rule of `conversion.fixtures.compare.compare_fixtures`,
which `voxport fixtures swift --check` applies too.

CI runs on whichever machine it is given, so the check must hold on any CPU of this kind, not
only the one that wrote the fixtures: the second test writes them again on another float path
— MKL told to use its CPU-independent kernels (`MKL_CBWR=COMPATIBLE`), which moves Kokoro's
`har` exactly as an AMD EPYC did (max|Δ| 1.26e-3 / 1.7e-4 / 6.3e-5 on a phase-by-phase check,
issue 29) — and holds it to the same rule."""

import os
import subprocess
import sys
from pathlib import Path

from conversion.cli.swift_fixtures import compare_fixtures, write_fixtures

REPO = Path(__file__).resolve().parents[1]
COMMITTED = REPO / "ios" / "Tests" / "Fixtures"


def test_committed_swift_fixtures_are_current(tmp_path):
    write_fixtures(tmp_path / "fx")
    problems = compare_fixtures(tmp_path / "fx", COMMITTED)
    assert problems == [], "run: voxport fixtures swift\n" + "\n".join(problems)


def test_committed_swift_fixtures_hold_on_another_cpu_float_path(tmp_path):
    script = (
        "import sys; from pathlib import Path;"
        "from conversion.cli.swift_fixtures import compare_fixtures, write_fixtures;"
        "out = Path(sys.argv[1]); write_fixtures(out);"
        "print('\\n'.join(compare_fixtures(out, Path(sys.argv[2]))))"
    )
    env = {**os.environ, "MKL_CBWR": "COMPATIBLE"}
    run = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "fx"), str(COMMITTED)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "", "on MKL's compatible path:\n" + run.stdout
