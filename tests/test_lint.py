"""The pre-export lint names each unsupported op with its workaround, before the converter."""

import pytest
import torch

from conversion.core.errors import ExportLintError
from tests.roundtrip import run_through_coreai


class Stft(torch.nn.Module):
    def forward(self, x):
        return torch.stft(x, 16, 4, window=torch.hann_window(16), return_complex=True).abs()


class Rfft(torch.nn.Module):
    def forward(self, x):
        return torch.fft.rfft(x).abs()


class Noise(torch.nn.Module):
    def forward(self, x):
        return x + torch.randn_like(x)


class Multinomial(torch.nn.Module):
    def forward(self, x):
        return torch.multinomial(x.softmax(-1), 1).int()


class Repeat(torch.nn.Module):
    def forward(self, x, counts):
        return torch.repeat_interleave(x, counts.long(), dim=0)


class Unfold(torch.nn.Module):
    def forward(self, x):
        return x.unfold(-1, 4, 2)


class IndexWrite(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("cache", torch.zeros(1, 4, 8, 3), persistent=False)

    def forward(self, x, pos):
        self.cache[0, :, pos.long()] = x
        return self.cache.sum(2)


class Double(torch.nn.Module):
    def forward(self, ids):
        return ids * 2


CASES = [
    (Stft(), {"x": torch.randn(64)}, "stft/fft", "conversion.core.host.dsp"),
    (Rfft(), {"x": torch.randn(2, 64)}, "stft/fft", "host"),
    (Noise(), {"x": torch.randn(2, 8)}, "rand*", "input"),
    (Multinomial(), {"x": torch.randn(2, 8)}, "multinomial", "Gumbel-max"),
    (
        Repeat(),
        {"x": torch.randn(3, 4), "counts": torch.tensor([1, 2, 1], dtype=torch.int32)},
        "repeat_interleave",
        "cut the graph",
    ),
    (Unfold(), {"x": torch.randn(2, 16)}, "unfold", "strided slices"),
    (
        IndexWrite(),
        {"x": torch.randn(4, 1, 3), "pos": torch.tensor([2], dtype=torch.int32)},
        "advanced-index write into state 'cache'",
        "index_copy_",
    ),
    (Double(), {"ids": torch.arange(4)}, "int64 input 'ids'", "int32"),
]


@pytest.mark.parametrize(
    ("module", "inputs", "problem", "fix"), CASES, ids=[type(c[0]).__name__ for c in CASES]
)
def test_lint_names_problem_and_fix(module, inputs, problem, fix):
    with pytest.raises(ExportLintError) as err:
        run_through_coreai(module, inputs, ["y"])
    text = str(err.value)
    assert problem in text and fix in text
    # The source line is named, so the author can find it.
    assert "forward" in text or "return" in text or "example inputs" in text or "=" in text


def test_elu_is_decomposed_not_refused():
    m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ELU()).eval()
    x = torch.randn(3, 4) * 3
    got = run_through_coreai(m, {"x": x}, ["y"])["y"]
    assert abs(got - m(x).numpy()).max() < 1e-6
