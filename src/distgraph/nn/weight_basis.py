"""`WeightBasis`: DGL's basis decomposition of many weight matrices (RGCN's regulariser):
W_o = sum_b a_ob V_b, `num_outputs` weights of one `shape` from `num_bases` shared bases."""

from __future__ import annotations

import warnings

import torch
from torch import nn


class WeightBasis(nn.Module):
    """`WeightBasis(shape, num_bases, num_outputs)()` is the (num_outputs, *shape) tensor of
    the composed weights; the bases (`weight`) and coefficients (`w_comp`) are learnt."""

    def __init__(self, shape: tuple[int, ...], num_bases: int, num_outputs: int):
        super().__init__()
        self.shape, self.num_bases, self.num_outputs = tuple(shape), num_bases, num_outputs
        if num_outputs <= num_bases:
            warnings.warn(f"WeightBasis composes {num_outputs} weights from {num_bases} bases: fewer bases than "
                          f"weights is what makes it a regulariser", stacklevel=2)
        self.weight = nn.Parameter(torch.empty(num_bases, *self.shape))
        self.w_comp = nn.Parameter(torch.empty(num_outputs, num_bases))
        nn.init.xavier_uniform_(self.weight, gain=nn.init.calculate_gain("relu"))
        nn.init.xavier_uniform_(self.w_comp, gain=nn.init.calculate_gain("relu"))

    def forward(self) -> torch.Tensor:
        return (self.w_comp @ self.weight.view(self.num_bases, -1)).view(self.num_outputs, *self.shape)
