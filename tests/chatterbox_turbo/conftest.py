"""Chatterbox Turbo's reduced random snapshot, written once into voxport's weights cache."""

from __future__ import annotations

import pytest
import torch

from conversion.chatterbox_turbo.config import REDUCED
from conversion.chatterbox_turbo.weights import cached_random_snapshot, load_model


@pytest.fixture(scope="session")
def turbo_snapshot():
    return cached_random_snapshot(REDUCED, 0)


@pytest.fixture(scope="session")
def turbo_model(turbo_snapshot):
    torch.set_num_threads(1)
    return load_model(turbo_snapshot)
