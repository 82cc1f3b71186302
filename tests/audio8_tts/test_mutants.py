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
from conversion.audio8_tts import pipeline, weights
from conversion.audio8_tts.ar import graphs as G
from conversion.audio8_tts.ar import host as AH
from conversion.audio8_tts.ar import layers as AL
from conversion.audio8_tts.codec import graphs as CG
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


def _port_parts() -> tuple:
    return (
        G.Audio8ARGraph.frame,
        G.Audio8ARGraph.prefill,
        G.Audio8ARGraph._slow,
        G.Audio8ARGraph._semantic,
        G._draw,
        G.head_rows,
        AL.bf16_rope_pairs,
        AL.rotate_pairs,
        AH.generate,
        AH._prefill,
        AH.next_window,
        CH.window_plan,
        CG.CodecDecode.forward,
        CG.CodecDecode.__init__,
        CG.CodecEncode.forward,
        pipeline.build_prompt,
    )


def test_injection_leaves_the_port_as_it_found_it():
    before = _port_parts()
    changed = 0
    for m in M.CATALOGUE:
        with m.inject():
            changed += _port_parts() != before  # each fault is in a part listed here
        assert _port_parts() == before, m.name
    assert changed == len(M.CATALOGUE)


@pytest.mark.slow
def test_baseline_passes_and_every_fault_is_killed(table):
    assert not table.baseline_failures, table.markdown()
    assert table.total == len(M.REDUCED_CATALOGUE)
    assert not table.survivors, table.markdown()
    assert table.passed, table.markdown()
