"""`HeteroGraphConv`: one module per relation of a heterogeneous graph's block, their outputs
summed (or otherwise combined) per destination node type, as DGL's wrapper does."""

from __future__ import annotations

import torch
from torch import nn

from ..block import Block

_AGGREGATE = {"sum": lambda xs: torch.stack(xs).sum(0), "mean": lambda xs: torch.stack(xs).mean(0),
              "max": lambda xs: torch.stack(xs).max(0).values, "min": lambda xs: torch.stack(xs).min(0).values,
              "stack": lambda xs: torch.stack(xs, 1)}


class HeteroGraphConv(nn.Module):
    """`HeteroGraphConv({relation: module}, aggregate)`: each module runs on its relation's block
    (`block.relation(etype)`, sources of the relation's source type, destinations of its
    destination type) with (source rows, destination rows) of those types; relations without
    edges are skipped. Modules are looked up by relation name or by 'src:rel:dst'."""

    def __init__(self, mods: dict[str, nn.Module], aggregate: str = "sum"):
        super().__init__()
        if aggregate not in _AGGREGATE:
            raise ValueError(f"aggregate must be one of {', '.join(_AGGREGATE)}, got {aggregate!r}")
        self.mods = nn.ModuleDict(mods)
        self.aggregate = aggregate

    def _module(self, c: tuple[str, str, str]) -> nn.Module | None:
        key = ":".join(c)
        return self.mods[key] if key in self.mods else self.mods[c[1]] if c[1] in self.mods else None

    def forward(self, block: Block, inputs, mod_args: dict | None = None, mod_kwargs: dict | None = None
                ) -> dict[str, torch.Tensor]:
        """{destination node type: rows} from `inputs` ({source node type: rows}, whose first
        rows of each type are its destinations; or a (sources, destinations) pair of dicts)."""
        src_in, dst_in = inputs if isinstance(inputs, tuple) else (
            inputs, {t: h[: block.num_dst_nodes(t)] for t, h in inputs.items()})
        found: dict[str, list[torch.Tensor]] = {}
        for c in block.canonical_etypes:
            mod = self._module(c)
            if mod is None or block.num_edges(c) == 0 or c[0] not in src_in or c[2] not in dst_in:
                continue
            args = (mod_args or {}).get(c[1], ())
            kwargs = (mod_kwargs or {}).get(c[1], {})
            out = mod(block.relation(c), (src_in[c[0]], dst_in[c[2]]), *args, **kwargs)
            found.setdefault(c[2], []).append(out)
        return {t: _AGGREGATE[self.aggregate](xs) for t, xs in found.items()}
