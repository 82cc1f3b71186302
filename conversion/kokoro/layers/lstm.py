"""A masked, unrolled bidirectional LSTM for right-padded static buckets.

`nn.LSTM` over a padded sequence lets the pad leak into the backward direction and corrupt
every real step. Here the pad positions carry the state instead of updating it, so the
backward direction starts fresh at the last real token: exact on the real span. Both
directions step together (a batched matmul over a direction axis), which halves the number of
unrolled ops; torch.export specialises the loop to the bucket's length.
"""

from __future__ import annotations

import torch
from torch import nn


class MaskedBiLSTM(nn.Module):
    """forward(x [B, T, C], mask [B, T] (1 real, 0 pad)) -> [B, T, 2H], zero at pad steps.

    Built from a one-layer, bidirectional, batch_first `nn.LSTM` (torch gate order i, f, g, o);
    on the real span it equals that LSTM run on the unpadded sequence.
    """

    def __init__(self, lstm: nn.LSTM) -> None:
        super().__init__()
        if not (lstm.bidirectional and lstm.num_layers == 1 and lstm.batch_first and lstm.bias):
            raise ValueError("MaskedBiLSTM needs a 1-layer, bidirectional, batch_first LSTM")
        if lstm.proj_size:
            raise ValueError("LSTM projections are not supported")
        self.hidden = lstm.hidden_size
        w_ih = [lstm.weight_ih_l0, lstm.weight_ih_l0_reverse]
        w_hh = [lstm.weight_hh_l0, lstm.weight_hh_l0_reverse]
        b = [
            lstm.bias_ih_l0 + lstm.bias_hh_l0,
            lstm.bias_ih_l0_reverse + lstm.bias_hh_l0_reverse,
        ]
        # [2, C, 4H], [2, H, 4H], [2, 1, 4H]: direction-major, ready for matmul from the left.
        self.w_ih = nn.Parameter(torch.stack([w.detach().t() for w in w_ih]), requires_grad=False)
        self.w_hh = nn.Parameter(torch.stack([w.detach().t() for w in w_hh]), requires_grad=False)
        self.bias = nn.Parameter(torch.stack(b).detach().unsqueeze(1), requires_grad=False)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        bsz, t, _ = x.shape
        hid = self.hidden
        # Input projections for every step at once: [2, B, T, 4H].
        xw = torch.matmul(x.unsqueeze(0), self.w_ih.unsqueeze(1)) + self.bias.unsqueeze(1)
        # Step k feeds the forward direction position k and the backward one position T-1-k.
        steps = torch.stack([xw[0], xw[1].flip(1)]).permute(2, 0, 1, 3)  # [T, 2, B, 4H]
        m = mask.to(x.dtype)
        keep = torch.stack([m, m.flip(1)]).permute(2, 0, 1).unsqueeze(-1) > 0.5  # [T, 2, B, 1]
        h = x.new_zeros(2, bsz, hid)
        c = x.new_zeros(2, bsz, hid)
        outs = []
        for k, (gx, real) in enumerate(zip(steps.unbind(0), keep.unbind(0), strict=True)):
            gates = gx + torch.bmm(h, self.w_hh) if k else gx  # h0 = 0: skip the first matmul
            i, f, g, o = gates.split(hid, dim=-1)
            c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h_new = torch.sigmoid(o) * torch.tanh(c_new)
            # Pad steps keep the state: the backward pass starts at the last real token.
            c = torch.where(real, c_new, c)
            h = torch.where(real, h_new, h)
            outs.append(h)
        hs = torch.stack(outs)  # [T, 2, B, H]
        fwd = hs[:, 0].permute(1, 0, 2)
        bwd = hs[:, 1].flip(0).permute(1, 0, 2)
        return torch.cat([fwd, bwd], dim=-1) * m.unsqueeze(-1)
