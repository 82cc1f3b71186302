"""A bidirectional LSTM that is exact on the real span of a right-padded static bucket.

`nn.LSTM(bidirectional=True)` over a padded sequence lets the pad leak into the backward
direction (it starts at the pad) and corrupts every real step. Here each direction is a plain
one-direction LSTM (`torch.lstm`, exact on the Linux runtime):

- forward direction on the padded sequence as it is: the pad comes after every real step, so
  the real outputs never see it;
- backward direction on the sequence with only its real span reversed (t -> n-1-t for t < n,
  the pad left in place), so it too meets the real steps first and the pad after them; its
  output is put back in order with the same index (the permutation is its own inverse).

coreai-torch 0.4.3 has no LSTM lowering: torch's default decomposition unrolls `aten.lstm`
into per-step ops before conversion, so conversion time still grows with T. It is ~1.5x less
than the previous masked, unrolled version (no per-step mask selects) at T=512.

This needs a prefix mask (1 on the first n steps, 0 after), which is what the buckets give.
"""

from __future__ import annotations

import torch
from torch import nn


class _Direction(nn.Module):
    """One direction of a bidirectional `nn.LSTM`, called as a single-direction `torch.lstm`.

    The functional call (one `aten.lstm` op, as `nn.LSTM` exports to) keeps plain Parameters:
    `nn.LSTM` itself re-assigns `_flat_weights` while tracing, which export warns about.
    """

    def __init__(self, lstm: nn.LSTM, suffix: str) -> None:
        super().__init__()
        self.hidden = lstm.hidden_size
        for name in ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"):
            p = getattr(lstm, name + suffix).detach().clone()
            self.register_parameter(name.removesuffix("_l0"), nn.Parameter(p, requires_grad=False))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h0 = x.new_zeros(1, x.shape[0], self.hidden)
        params = [self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh]
        # (input, (h0, c0), params, has_biases, num_layers, dropout, train, bidirectional,
        # batch_first)
        out, _, _ = torch.lstm(x, (h0, h0), params, True, 1, 0.0, False, False, True)
        return out


def real_span_reversal(mask: torch.Tensor) -> torch.Tensor:
    """int64 [B, T]: n-1-t for t < n (n = real steps per row), t on the pad.

    Built in-graph from the mask with int32 arithmetic; the cast to int64 is only what
    `torch.gather` asks for. Applying it twice is the identity.
    """
    t = mask.shape[1]
    # Counted in int32, not summed in the mask's dtype: fp16 stops counting exactly past 2048.
    n = (mask > 0.5).to(torch.int32).sum(dim=1, keepdim=True, dtype=torch.int32)  # [B, 1]
    pos = torch.arange(t, dtype=torch.int32, device=mask.device).unsqueeze(0)  # [1, T]
    return torch.where(pos < n, n - 1 - pos, pos).to(torch.int64)


def _permute_steps(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """x [B, T, C] with its steps reordered by index [B, T]."""
    return torch.gather(x, 1, index.unsqueeze(-1).expand(-1, -1, x.shape[-1]))


class MaskedBiLSTM(nn.Module):
    """forward(x [B, T, C], mask [B, T] (1 real, 0 pad)) -> [B, T, 2H], zero at pad steps.

    Built from a one-layer, bidirectional, batch_first `nn.LSTM`; on the real span it equals
    that LSTM run on the unpadded sequence. The mask must be a prefix: n ones, then zeros.
    """

    def __init__(self, lstm: nn.LSTM) -> None:
        super().__init__()
        if not (lstm.bidirectional and lstm.num_layers == 1 and lstm.batch_first and lstm.bias):
            raise ValueError("MaskedBiLSTM needs a 1-layer, bidirectional, batch_first LSTM")
        if lstm.proj_size:
            raise ValueError("LSTM projections are not supported")
        self.hidden = lstm.hidden_size
        self.fwd = _Direction(lstm, "")
        self.bwd = _Direction(lstm, "_reverse")

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        rev = real_span_reversal(mask)
        fwd = self.fwd(x)
        bwd = self.bwd(_permute_steps(x, rev))
        out = torch.cat([fwd, _permute_steps(bwd, rev)], dim=-1)
        # where, not a multiply: a non-finite input on the pad must still give zeros there.
        real = (mask > 0.5).unsqueeze(-1)
        return torch.where(real, out, torch.zeros_like(out))
