"""The hostile-input probes (tests/probes.py), the cheap set: every one refused cleanly."""

import io

import pytest

from tests import probes


@pytest.mark.slow
def test_every_cheap_probe_is_refused_cleanly():
    out = io.StringIO()
    outcomes = probes.run(full=False, out=out)
    failed = [f"{o.probe.name}: {o.problems}" for o in outcomes if not o.clean]
    assert not failed, out.getvalue()
    assert len(outcomes) >= 25
    print(out.getvalue().splitlines()[-1])  # probes: N tried, N clean, 0 failed


def test_a_probe_the_program_accepts_is_not_clean(tmp_path):
    """The harness can fail: a command that succeeds, says nothing, or changes what it was
    pointed at is a failed probe, each for its own reason."""
    accepted = probes.Probe("accepted", ["doctor", "--no-selftest", "--json", "{d}/x.json"], "x")
    o = probes.run_probe(accepted, tmp_path)
    assert not o.clean
    assert any("exit 0, not 2" in p for p in o.problems)
    assert any("0 error lines" in p for p in o.problems)
    changed = probes.Probe(
        "changed",
        ["doctor", "--no-selftest", "--json", "{d}/f"],
        "FIFO",
        lambda d: (d / "f").write_text("a file, not a FIFO"),
        [probes.still("fifo", "f")],
    )
    o = probes.run_probe(changed, tmp_path)
    assert any("no longer a fifo" in p for p in o.problems), o.problems
