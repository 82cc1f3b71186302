import warnings

import pytest
import torch

warnings.filterwarnings("ignore", message="coreai-torch has only been validated")


@pytest.fixture(autouse=True)
def _no_grad():
    with torch.no_grad():
        yield
