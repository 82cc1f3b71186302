"""The two bi-LSTM forms Kokoro tried and reverted, kept so docs/tools/rewrite_ab.py can time them.

Both are drop-in replacements for `conversion.kokoro.layers.lstm.MaskedBiLSTM` (same
constructor, same `forward(x [B, T, C], mask [B, T]) -> [B, T, 2H]`, exact on the real span):

- `TorchLstmBiLSTM`: each direction one `torch.lstm`, the backward one over the real span
  reversed in-graph (commit 5fc340d, reverted in eea0549: the published assets grew);
- `LoopBiLSTM`: the masked recurrence as one `torch._higher_order_ops.while_loop`, lowered to
  one `coreai.while_` (commit f6370ab, reverted in 2471553: `coreai doctor` rules it FATAL on
  devices).

The code is those commits' own, trimmed of what the timing does not need. Not used by any
graph: a tool's fixture, nothing more.
"""

from __future__ import annotations

import torch
from torch import nn


class _Direction(nn.Module):
    """One direction of a bidirectional `nn.LSTM`, called as a single-direction `torch.lstm`."""

    def __init__(self, lstm: nn.LSTM, suffix: str) -> None:
        super().__init__()
        self.hidden = lstm.hidden_size
        for name in ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"):
            p = getattr(lstm, name + suffix).detach().clone()
            self.register_parameter(name.removesuffix("_l0"), nn.Parameter(p, requires_grad=False))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h0 = x.new_zeros(1, x.shape[0], self.hidden)
        params = [self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh]
        out, _, _ = torch.lstm(x, (h0, h0), params, True, 1, 0.0, False, False, True)
        return out


def _real_span_reversal(mask: torch.Tensor) -> torch.Tensor:
    """int64 [B, T]: n-1-t for t < n (n = real steps per row), t on the pad."""
    t = mask.shape[1]
    n = (mask > 0.5).to(torch.int32).sum(dim=1, keepdim=True, dtype=torch.int32)
    pos = torch.arange(t, dtype=torch.int32, device=mask.device).unsqueeze(0)
    return torch.where(pos < n, n - 1 - pos, pos).to(torch.int64)


def _permute_steps(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    return torch.gather(x, 1, index.unsqueeze(-1).expand(-1, -1, x.shape[-1]))


class TorchLstmBiLSTM(nn.Module):
    """Each direction one `torch.lstm` (5fc340d); the mask must be a prefix."""

    def __init__(self, lstm: nn.LSTM) -> None:
        super().__init__()
        self.hidden = lstm.hidden_size
        self.fwd = _Direction(lstm, "")
        self.bwd = _Direction(lstm, "_reverse")

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        rev = _real_span_reversal(mask)
        fwd = self.fwd(x)
        bwd = self.bwd(_permute_steps(x, rev))
        out = torch.cat([fwd, _permute_steps(bwd, rev)], dim=-1)
        real = (mask > 0.5).unsqueeze(-1)
        return torch.where(real, out, torch.zeros_like(out))


class LoopBiLSTM(nn.Module):
    """The masked recurrence as one graph loop (f6370ab)."""

    def __init__(self, lstm: nn.LSTM) -> None:
        super().__init__()
        self.hidden = lstm.hidden_size
        w_ih = [lstm.weight_ih_l0, lstm.weight_ih_l0_reverse]
        w_hh = [lstm.weight_hh_l0, lstm.weight_hh_l0_reverse]
        b = [
            lstm.bias_ih_l0 + lstm.bias_hh_l0,
            lstm.bias_ih_l0_reverse + lstm.bias_hh_l0_reverse,
        ]
        self.w_ih = nn.Parameter(torch.stack([w.detach().t() for w in w_ih]), requires_grad=False)
        self.w_hh = nn.Parameter(torch.stack([w.detach().t() for w in w_hh]), requires_grad=False)
        self.bias = nn.Parameter(torch.stack(b).detach().unsqueeze(1), requires_grad=False)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        from torch._higher_order_ops.while_loop import while_loop

        bsz, t, _ = x.shape
        hid = self.hidden
        w_hh = self.w_hh
        xw = torch.matmul(x.unsqueeze(0), self.w_ih.unsqueeze(1)) + self.bias.unsqueeze(1)
        steps = torch.stack([xw[0], xw[1].flip(1)]).permute(2, 0, 1, 3)  # [T, 2, B, 4H]
        m = mask.to(x.dtype)
        keep = torch.stack([m, m.flip(1)]).permute(2, 0, 1).unsqueeze(-1)  # [T, 2, B, 1]

        def more(k, h, c, hs):
            return k < t

        def step(k, h, c, hs):
            at = k.unsqueeze(0)
            gates = steps.index_select(0, at).reshape(2, bsz, 4 * hid) + torch.bmm(h, w_hh)
            real = keep.index_select(0, at).reshape(2, bsz, 1) > 0.5
            i, f, g, o = gates.split(hid, dim=-1)
            c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h_new = torch.sigmoid(o) * torch.tanh(c_new)
            c = torch.where(real, c_new, c)
            h = torch.where(real, h_new, h)
            return k + 1, h, c, hs.index_copy(0, at, h.unsqueeze(0))

        start = (
            torch.zeros((), dtype=torch.int64),
            x.new_zeros(2, bsz, hid),
            x.new_zeros(2, bsz, hid),
            x.new_zeros(t, 2, bsz, hid),
        )
        hs = while_loop(more, step, start)[3]
        fwd = hs[:, 0].permute(1, 0, 2)
        bwd = hs[:, 1].flip(0).permute(1, 0, 2)
        return torch.cat([fwd, bwd], dim=-1) * m.unsqueeze(-1)
