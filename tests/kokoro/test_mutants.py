"""Kokoro's gate catches the faults a new user's bug would put into the port (issue 20).

CI runs the reduced catalogue (`mutants.REDUCED`: every host fault and one graph fault,
re-exported at its smallest bucket) against the reduced bundle at CI's seed, in the cheap
mode (each ladder stops at its first failing rung, without the other buckets' and the speech
rungs): the unbroken port must pass, every fault must fail a rung, and each fault must be
caught by the rung written for it (not by a crash). The full table, every rung, is the
card's (`voxport gate kokoro --config reduced --mutants`).
"""

from __future__ import annotations

import hashlib
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import pytest

from conversion.kokoro import alignment, host, mutants, pipeline, source, weights
from conversion.kokoro.gate import record_cases
from conversion.kokoro.port import PORT
from conversion.kokoro.text import chunks, timings
from gates.mutants import Mutant

# What each CI fault must fail first, written out here (rung names begin with these).
FIRST_KILLER = {
    "g2p-drops-stress": "G2P:",
    "timings-no-lead-in": "host: word timings",
    "voice-row-off-by-one": "host: voxport's ids and voice row",
    "durations-truncated": "predictor: rounded durations",
    "alignment-frame-shift": "prosody:",
    "stft-replicate-pad": "host: harmonic source",
    "stft-symmetric-window": "host: harmonic source",
    "stft-phase-sign": "host: harmonic source",
    "source-f0-fp16": "host: harmonic source",
    "stride-blind-copy": "prosody:",  # the oracle's d keeps torch's transposed layout
    "prosody-mask-one-frame-short": "prosody:",
}
CI_SEED = 0  # `voxport gate`'s default seed, the one CI's gate runs at
# A "fault" that changes nothing must survive: the ladder kills faults, not every row (a
# replay or a rung that failed whatever it was given would kill this one too).
CONTROL = Mutant("control-no-fault", "nothing is changed", nullcontext)


def _port_fingerprint() -> list[object]:
    """The objects every fault replaces: all must be back after the catalogue."""
    return [
        chunks.tokens_phonemes,
        timings.LEAD_IN_FRAMES,
        host.ref_s_for,
        host.pred_durations,
        alignment.alignment_matrix,
        source.stft,
        source.hann_window,
        source.magnitude_phase,
        source._f0_samples,
        pipeline.pad_to,
        mutants.graphs.Vocoder.forward,
        mutants.graphs.Predictor.forward,
        mutants.graphs.Prosody.forward,
        mutants.istft.MaskedISTFT.forward,
    ]


def _tree_digest(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(folder)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()


@pytest.fixture(scope="module")
def kill_table():
    """The reduced catalogue against the reduced bundle (exported once at its default folder
    and shared with test_cli.py, test_workers.py and the Swift end-to-end tests)."""
    folder, config = PORT.resolve(None, "reduced", 0)
    kmodel = weights.load_kmodel(folder)
    bundle = PORT.ensure_bundle(folder, config, "reduced", "fp32", loaded=kmodel)
    before = _tree_digest(bundle), _port_fingerprint()
    cases = record_cases(kmodel, "reduced", CI_SEED)
    table = mutants.run_mutants(kmodel, bundle, cases, [*mutants.REDUCED, CONTROL], quick=True)
    print(table.markdown())
    return table, before, (_tree_digest(bundle), _port_fingerprint())


@pytest.mark.slow
def test_reduced_catalogue_covers_host_and_graph_faults():
    names = [m.name for m in mutants.REDUCED]
    assert set(names) == set(FIRST_KILLER)
    assert any(m.graph for m in mutants.REDUCED) and any(m.graph is None for m in mutants.REDUCED)
    assert set(names) <= {m.name for m in mutants.CATALOGUE}


@pytest.mark.slow
def test_the_unbroken_port_passes_and_every_fault_is_killed(kill_table):
    table, _, _ = kill_table
    assert not table.baseline_failures, table.baseline_failures
    errors = {o.name: o.error for o in table.outcomes if o.error}
    assert not errors, errors  # a fault that crashes before the ladder is not a kill
    assert table.survivors == [CONTROL.name], table.markdown()
    assert table.killed == len(mutants.REDUCED)


@pytest.mark.slow
def test_each_fault_is_caught_by_its_own_rung(kill_table):
    table, _, _ = kill_table
    first = {
        o.name: (o.killed_by or ["survived"])[0] for o in table.outcomes if o.name != CONTROL.name
    }
    wrong = {n: r for n, r in first.items() if not r.startswith(FIRST_KILLER[n])}
    assert not wrong, wrong
    # Stopped at its first failure: one rung per row, and a rung of the baseline's ladder.
    rows = [o for o in table.outcomes if o.name != CONTROL.name]
    assert all(len(o.killed_by) == 1 and o.killed_by[0] in table.rungs for o in rows)


@pytest.mark.slow
def test_faults_leave_the_port_and_the_bundle_as_they_were(kill_table):
    _, before, after = kill_table
    assert before[0] == after[0]  # the baseline bundle's files, byte for byte
    assert all(a is b for a, b in zip(before[1], after[1], strict=True))


def test_stride_blind_copy_is_wrong_only_for_a_strided_array():
    """The stride-blind fault is a real one: a contiguous array passes through unchanged, a
    slice of a bucket's output (t_en[:, :, :T]) does not."""
    with mutants.CATALOGUE[[m.name for m in mutants.CATALOGUE].index("stride-blind-copy")].inject():
        full = np.arange(2 * 3 * 8, dtype=np.float32).reshape(2, 3, 8)
        np.testing.assert_array_equal(
            pipeline.pad_to(full, 10), np.pad(full, [(0, 0)] * 2 + [(0, 2)])
        )
        sliced = full[:, :, :5]
        assert not np.array_equal(pipeline.pad_to(sliced, 8)[..., :5], sliced)
    assert np.array_equal(pipeline.pad_to(sliced, 8)[..., :5], sliced)  # undone on exit
