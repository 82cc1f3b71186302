"""MaskedBiLSTM against the publisher's bidirectional `nn.LSTM` run on the unpadded sequence."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from conversion.core.testing import run_through_coreai
from conversion.kokoro.layers.lstm import MaskedBiLSTM, real_span_reversal

C, H = 48, 16
JUNK = 100.0  # what the pad holds: big enough that any leak into the real span shows


def _lstm(seed: int = 0) -> torch.nn.LSTM:
    torch.manual_seed(seed)
    return torch.nn.LSTM(C, H, 1, batch_first=True, bidirectional=True).eval()


def _padded(x: torch.Tensor, size: int, value: float = JUNK) -> tuple[torch.Tensor, torch.Tensor]:
    """x [1, n, C] right-padded to `size` steps with `value`, and its float prefix mask."""
    n = x.shape[1]
    pad = torch.full((1, size - n, x.shape[2]), value)
    return torch.cat([x, pad], dim=1), (torch.arange(size) < n).float()[None]


class _Wrap(torch.nn.Module):
    def __init__(self, lstm: MaskedBiLSTM) -> None:
        super().__init__()
        self.lstm = lstm

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.lstm(x, mask)


def test_real_span_reversal_reverses_only_the_real_span():
    mask = torch.tensor([[1.0, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]])
    rev = real_span_reversal(mask)
    assert rev.tolist() == [[2, 1, 0, 3, 4], [4, 3, 2, 1, 0], [0, 1, 2, 3, 4]]
    assert torch.equal(rev.gather(1, rev), torch.arange(5).expand(3, 5))  # its own inverse


@pytest.mark.parametrize("n", [1, 2, 13, 20])
def test_equals_nn_lstm_on_the_unpadded_sequence(n):
    lstm = _lstm()
    x = torch.randn(1, n, C)
    with torch.no_grad():
        want, _ = lstm(x)
        got = MaskedBiLSTM(lstm)(*_padded(x, 20))
    assert (got[:, :n] - want).abs().max() <= 1e-6
    assert torch.all(got[:, n:] == 0)


def test_pad_is_zero_and_does_not_leak_even_when_non_finite():
    lstm = _lstm(1)
    x = torch.randn(1, 9, C)
    with torch.no_grad():
        want, _ = lstm(x)
        got = MaskedBiLSTM(lstm)(*_padded(x, 16, float("inf")))
        # The leak this class exists to stop: a plain bi-LSTM over the padded bucket.
        poisoned, _ = lstm(_padded(x, 16)[0])
    assert (poisoned[:, :9] - want).abs().max() > 1e-2
    assert (got[:, :9] - want).abs().max() <= 1e-6
    assert torch.all(got[:, 9:] == 0)


def test_rows_of_a_batch_use_their_own_lengths():
    lstm = _lstm(2)
    xs = [torch.randn(1, n, C) for n in (5, 12)]
    padded = [_padded(x, 12) for x in xs]
    x = torch.cat([p[0] for p in padded])
    mask = torch.cat([p[1] for p in padded])
    with torch.no_grad():
        got = MaskedBiLSTM(lstm)(x, mask)
        for row, xr in enumerate(xs):
            want, _ = lstm(xr)
            assert (got[row : row + 1, : xr.shape[1]] - want).abs().max() <= 1e-6
    assert torch.all(got[0, 5:] == 0)


def test_runs_exactly_through_the_coreai_runtime():
    lstm = _lstm(3)
    n, t = 11, 16
    x = torch.randn(1, n, C)
    xp, mask = _padded(x, t, 0.5)  # finite junk: the runtime sees the bucket as traced
    with torch.no_grad():
        want = lstm(x)[0].numpy()
    got = run_through_coreai(_Wrap(MaskedBiLSTM(lstm)), {"x": xp, "mask": mask}, ["y"])["y"]
    real = got[:, :n].astype(np.float64).ravel()
    cos = real @ want.ravel() / (np.linalg.norm(real) * np.linalg.norm(want))
    assert cos >= 0.99999
    assert np.abs(got[:, :n] - want).max() <= 1e-5
    assert np.all(got[:, n:] == 0)
