"""Built-in edge functions with DGL's names (`dgl.function`), for `apply_edges` on the pair
graphs link-prediction loaders yield: `u_dot_v("h", "h", "score")` writes, for every edge
(u, v), the dot product of u's and v's "h" into its "score" (shape (E, 1), as DGL's);
`u_add_v`, `u_sub_v`, `u_mul_v`, `u_div_v` and every other pairing of u (source), v
(destination) and e (the edge's own data) work alike, element-wise."""

from __future__ import annotations

from dataclasses import dataclass

import torch

_OPS = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
        "dot": lambda a, b: (a * b).sum(-1, keepdim=True)}


@dataclass(frozen=True)
class BinaryEdgeFunction:
    """`out` = op(lhs side's `lhs_field`, rhs side's `rhs_field`) per edge; sides are 'u', 'v', 'e'."""

    lhs: str
    op: str
    rhs: str
    lhs_field: str
    rhs_field: str
    out: str

    def __call__(self, edges) -> dict[str, torch.Tensor]:
        side = {"u": edges.src, "v": edges.dst, "e": edges.data}
        return {self.out: _OPS[self.op](side[self.lhs][self.lhs_field], side[self.rhs][self.rhs_field])}


def _binary(lhs: str, op: str, rhs: str):
    def make(lhs_field: str, rhs_field: str, out: str) -> BinaryEdgeFunction:
        return BinaryEdgeFunction(lhs, op, rhs, lhs_field, rhs_field, out)

    make.__name__ = make.__qualname__ = f"{lhs}_{op}_{rhs}"
    make.__doc__ = f"Edge data `out` = {op}({lhs}[lhs_field], {rhs}[rhs_field])."
    return make


for _l in "uve":
    for _r in "uve":
        if _l != _r:
            for _op in _OPS:
                globals()[f"{_l}_{_op}_{_r}"] = _binary(_l, _op, _r)
del _l, _r, _op
