"""`ChatterboxPipeline.synthesize` takes T3's uniforms as an array as well as a callable (the
Swift worker test feeds recorded arrays); an array once raised numpy's truth-value error."""

import types

import numpy as np
import pytest

from conversion.chatterbox.config import REDUCED
from conversion.chatterbox.pipeline import ChatterboxPipeline, ChunkDraws


class _Stop(Exception):
    pass


@pytest.mark.parametrize("given", ["array", "callable", "none"])
def test_uniforms_reach_t3_as_given(given):
    rows = np.full((3, 8194), 0.5, np.float32)
    seen = {}

    def t3(chunk_ids, voice, options, uniforms, forced, on_token):
        seen["uniforms"] = uniforms
        raise _Stop

    pipeline = object.__new__(ChatterboxPipeline)
    pipeline.session = types.SimpleNamespace(
        since_mark=lambda: None, recycle_if_leaking=lambda mb: False
    )
    pipeline.t3 = t3
    pipeline.config = REDUCED  # check_voice reads the prompt cap
    voice = types.SimpleNamespace(prompt_token_len=0, source=None)
    chunk = types.SimpleNamespace(ids=[1, 2, 3])
    draws = {
        "array": ChunkDraws(uniforms=rows),
        "callable": ChunkDraws(uniforms=lambda step: rows[step]),
        "none": ChunkDraws(),
    }[given]
    with pytest.raises(_Stop):
        pipeline.synthesize(chunk, voice=voice, options=None, seed=7, draws=draws)
    if given == "array":
        assert seen["uniforms"] is rows
    elif given == "callable":
        assert seen["uniforms"] is draws.uniforms
    else:  # drawn from the seed: a callable giving 8194 uniforms per step
        assert seen["uniforms"](0).shape == (8194,)
