"""The runtime's per-call leak, and the recycled worker that keeps memory flat.

The Core AI Python runtime never frees a call's output buffers (the module docstring of
`IsolatedSession.recycle_if_leaking` has the measurements). An isolated child that is
restarted between utterances gives them back; the outputs stay correct across a restart.
"""

from __future__ import annotations

import numpy as np
import psutil
import torch

from conversion.core.bundle import BundleWriter
from conversion.core.runtime.isolated_session import IsolatedSession
from conversion.core.runtime.timed_session import TimedSession
from conversion.selftest import graphs as sg

CALLS = 1_500  # x 8 KB of outputs = ~12 MB a child would keep


def _mlp_bundle(dest):
    spec, inputs = sg.mlp_graph(0)
    with BundleWriter(dest, "test") as bw:
        bw.add_graph(spec)
    return spec.functions[0].module, inputs["x"]


def test_a_recycled_child_keeps_memory_flat_and_answers_the_same(tmp_path):
    module, x = _mlp_bundle(tmp_path / "b")
    x = x.numpy()
    expected = module(torch.from_numpy(x)).detach().numpy()
    me = psutil.Process()
    with IsolatedSession(tmp_path / "b") as plain, IsolatedSession(tmp_path / "b") as recycled:
        timed = TimedSession(recycled)
        for s in (plain, timed):
            s.run("mlp", "main", {"x": x})  # warm: lowering, first allocations
        base_plain, base_recycled, base_me = (
            plain.rss_bytes,
            recycled.rss_bytes,
            me.memory_info().rss,
        )
        for i in range(CALLS):
            plain.run("mlp", "main", {"x": x})
            out = timed.run("mlp", "main", {"x": x})["y"]
            if i % 100 == 99:  # an "utterance" boundary
                timed.recycle_if_leaking(limit_mb=4.0)
        grew_plain = (plain.rss_bytes - base_plain) / 2**20
        grew_recycled = (recycled.rss_bytes - base_recycled) / 2**20
        grew_me = (me.memory_info().rss - base_me) / 2**20
        assert np.abs(out - expected).max() < 1e-5  # answers from a restarted child
    print(
        f"child RSS over {CALLS} calls: {grew_plain:.1f} MB kept, {grew_recycled:.1f} MB recycled"
    )
    assert recycled.restarts == 2  # at 4 MB of outputs each
    assert grew_recycled <= 5.0 and grew_me <= 5.0
    assert grew_plain > grew_recycled + 6.0  # the leak this exists for is there to see
