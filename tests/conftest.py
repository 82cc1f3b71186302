import warnings

import pytest
import torch

warnings.filterwarnings("ignore", message="coreai-torch has only been validated")

pytest_plugins = ["tests.ci_skips"]  # in CI, a skip is a failure


@pytest.fixture(autouse=True)
def _no_grad():
    with torch.no_grad():
        yield


@pytest.fixture(scope="session")
def core_bundle(tmp_path_factory):
    """The self-test bundle's mlp and decoder (seed 3), exported once per test run: the bundle
    `voxport serve`'s tests (tests/test_serve*.py) serve whole or asset by asset."""
    from conversion.selftest.export import build_bundle

    return build_bundle(tmp_path_factory.mktemp("serve") / "b", seed=3, only=["mlp", "decoder"])
