"""Turbo's vocoder carries the shared HiFT calibration (`conversion.s3gen.calibration`): on the
mel of a recorded run it is voiced at speech-like f0, and a replaced mel moves its output. The
same bounds fail on the publisher's untrained scales of those layers (what Turbo's snapshots
held before: unvoiced, magspec 0.9999 whatever the mel)."""

import pytest

from conversion.chatterbox_turbo.oracle import record
from conversion.s3gen.calibration import hift_stats
from tests.s3gen.hift_calibration import hift_problems, untrained_hift

# a replaced mel must score under the loosest wav bar a gate rung sets (0.99: Chatterbox's e2e
# wav), so that a fault in the mel fails it. Turbo's seeded HiFT scores ~0.97 (Chatterbox's,
# from other draws, ~0.72), hence not Chatterbox's 0.9.
MAGSPEC_MAX = 0.99


@pytest.fixture(scope="module")
def mel(turbo_model):
    return record(turbo_model, "hello there", seed=1).intermediates["mel"]


def test_hift_is_voiced_and_depends_on_its_mel(turbo_model, mel):
    s = hift_stats(turbo_model, mel)
    print(f"\nTurbo HiFT: {s}")
    assert hift_problems(s, MAGSPEC_MAX) == []


def test_the_bounds_fail_on_the_untrained_initialisation(turbo_model, mel):
    with untrained_hift(turbo_model.s3gen.mel2wav):
        problems = hift_problems(hift_stats(turbo_model, mel), MAGSPEC_MAX)
    print(f"\nuntrained Turbo HiFT: {problems}")
    assert any("voiced" in p for p in problems) and any("replaced mel" in p for p in problems)
