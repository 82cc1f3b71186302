"""Audio8's gate catches the port faults it exists for (conversion/audio8_tts/mutants.py).

The reduced catalogue (`REDUCED_CATALOGUE`: graph faults in `ar` and `codec`, host faults in
the frame loop, the prefill copy and the codec window plan) runs the gate's ladder once
unbroken and once per fault, against one reference record: the baseline must pass and every
fault must fail at least one rung. The bundle is the reduced default one (`ensure_bundle`,
reused while current).
"""

from __future__ import annotations

import pytest
import torch

from conversion.audio8_tts import mutants as M
from conversion.audio8_tts import weights
from conversion.audio8_tts.ar import graphs as G
from conversion.audio8_tts.ar import host as AH
from conversion.audio8_tts.codec import host as CH
from conversion.audio8_tts.port import PORT
from gates.mutants import check_catalogue, select

SEED = 0


@pytest.fixture(scope="module")
def table():
    torch.set_num_threads(1)
    folder, config = PORT.resolve("random", "reduced", 0)
    loaded = weights.load(folder, config)
    bundle = PORT.ensure_bundle(folder, config, "reduced", "fp32", loaded=loaded)
    chosen = select(M.CATALOGUE, ",".join(M.REDUCED_CATALOGUE))
    return M.run_mutants(loaded, bundle, SEED, chosen, verbose=False)


def test_catalogue_names_are_unique_and_reduced_is_a_subset():
    check_catalogue(M.CATALOGUE)
    assert set(M.REDUCED_CATALOGUE) <= {m.name for m in M.CATALOGUE}


def test_injection_leaves_the_port_as_it_found_it():
    before = (G.Audio8ARGraph.frame, G.Audio8ARGraph._slow, G._draw, AH.generate, CH.window_plan)
    for m in M.CATALOGUE:
        with m.inject():
            pass
    after = (G.Audio8ARGraph.frame, G.Audio8ARGraph._slow, G._draw, AH.generate, CH.window_plan)
    assert before == after


@pytest.mark.slow
def test_baseline_passes_and_every_fault_is_killed(table):
    assert not table.baseline_failures, table.markdown()
    assert table.total == len(M.REDUCED_CATALOGUE)
    assert not table.survivors, table.markdown()
    assert table.passed, table.markdown()
