"""Score functions of DGL-KE's models, each with three vectorised forms.

- `pair(h, rel, t)`: one score per triple (positives).
- `tails(h, rel, cand)`: every (head, relation) of a chunk against every candidate tail,
  shapes (c, k, d) x (c, n, d) -> (c, k, n); `heads(cand, rel, t)` likewise for heads.
  Chunked negatives in training (c chunks of k positives sharing n negatives) and ranking
  against all entities in evaluation (c = 1) both use these, so scoring is a batched matrix
  product or one broadcast, never a loop.

Most models reduce a triple to a query vector on the known side and a match against the
candidate: TransE is `gamma - ||(h + r) - t||`, and also `gamma - ||h - (t - r)||`.
`rel` is a tuple with one tensor per relation table (`relation`, plus `projection` for TransR).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

import torch
from torch import Tensor

from .config import MODEL_NAMES, check_model, table_widths

EMB_INIT_EPS = 2.0


def _halves(x: Tensor) -> tuple[Tensor, Tensor]:
    """Real and imaginary (or first and second) halves of the last dimension."""
    d = x.shape[-1] // 2
    return x[..., :d], x[..., d:]


class KGEModel(ABC):
    """Dimensions, initial ranges and score forms shared by every model."""

    name = ""
    # scoring k queries against n candidates builds (k, n, dim) temporaries (not one matmul)
    pairwise_temporaries = False

    def __init__(self, hidden_dim: int, gamma: float, double_ent: bool = False, double_rel: bool = False):
        check_model(self.name, hidden_dim, double_ent, double_rel)
        self.hidden_dim = hidden_dim
        self.gamma = float(gamma)
        self.entity_dim = hidden_dim * (2 if double_ent else 1)
        self.relation_dim = hidden_dim * (2 if double_rel else 1)
        self.emb_init = (self.gamma + EMB_INIT_EPS) / hidden_dim

    def relation_tables(self) -> dict[str, int]:
        """Width of each table indexed by relation id, in the order of the `rel` tuple."""
        widths = table_widths(self.name, self.hidden_dim, self.entity_dim > self.hidden_dim,
                              self.relation_dim > self.hidden_dim)
        return {name: w for name, w in widths.items() if name != "entity"}

    def init_range(self, table: str) -> float:
        """Half-width of the uniform initialisation of a table."""
        return self.emb_init

    @abstractmethod
    def pair(self, h: Tensor, rel: tuple[Tensor, ...], t: Tensor) -> Tensor:
        """Score of each triple (h[i], rel[i], t[i])."""

    @abstractmethod
    def tails(self, h: Tensor, rel: tuple[Tensor, ...], cand: Tensor) -> Tensor:
        """Scores (c, k, n) of (h, rel) (c, k, .) with each candidate tail (c, n, d)."""

    @abstractmethod
    def heads(self, cand: Tensor, rel: tuple[Tensor, ...], t: Tensor) -> Tensor:
        """Scores (c, k, n) of each candidate head (c, n, d) with (rel, t) (c, k, .)."""


class _QueryModel(KGEModel):
    """Models that score a candidate by matching it against a query built from the known side."""

    @abstractmethod
    def query_tail(self, h: Tensor, rel: tuple[Tensor, ...]) -> Tensor:
        """Vector that scores a candidate tail by `match` (known head and relation)."""

    @abstractmethod
    def query_head(self, t: Tensor, rel: tuple[Tensor, ...]) -> Tensor:
        """Vector that scores a candidate head by `match` (known relation and tail)."""

    @abstractmethod
    def match(self, q: Tensor, cand: Tensor) -> Tensor:
        """Scores of queries (c, k, d) against candidates (c, n, d) -> (c, k, n)."""

    @abstractmethod
    def match_pairs(self, q: Tensor, x: Tensor) -> Tensor:
        """Scores of queries (..., d) against their own entity (..., d) -> (...)."""

    def pair(self, h: Tensor, rel: tuple[Tensor, ...], t: Tensor) -> Tensor:
        return self.match_pairs(self.query_tail(h, rel), t)

    def tails(self, h: Tensor, rel: tuple[Tensor, ...], cand: Tensor) -> Tensor:
        return self.match(self.query_tail(h, rel), cand)

    def heads(self, cand: Tensor, rel: tuple[Tensor, ...], t: Tensor) -> Tensor:
        return self.match(self.query_head(t, rel), cand)


class _Dot(_QueryModel):
    """Bilinear models: score = scale * <q, x>, optionally clamped."""

    scale = 1.0
    clamp: float | None = None

    def _finish(self, s: Tensor) -> Tensor:
        if self.scale != 1.0:
            s = s * self.scale
        return s if self.clamp is None else s.clamp(-self.clamp, self.clamp)

    def match(self, q: Tensor, cand: Tensor) -> Tensor:
        return self._finish(torch.matmul(q, cand.transpose(-1, -2)))

    def match_pairs(self, q: Tensor, x: Tensor) -> Tensor:
        return self._finish((q * x).sum(-1))


class _PairwiseL2Score(torch.autograd.Function):
    """gamma - ||q_i - c_j|| for all pairs via |q|^2 + |c|^2 - 2 q.c (one batched matmul).

    The backward is written out: with W = dL/dscore / dist, dL/dq = W c - q sum_j W and
    dL/dc = W^T q - c sum_i W, two matmuls and a few passes where autograd needs about ten
    passes over the (chunks x k x n) scores (10 % of a FB15k-237 training step). As with the
    clamp autograd would see, pairs at distance ~0 get no gradient.
    """

    @staticmethod
    def forward(ctx, q: Tensor, cand: Tensor, gamma: float) -> Tensor:
        # squared norms by one reduction each, half the memory traffic of (x * x).sum(-1)
        c2 = torch.linalg.vector_norm(cand, dim=-1).square_().unsqueeze(-2)
        q2 = torch.linalg.vector_norm(q, dim=-1).square_().unsqueeze(-1)
        dist = torch.baddbmm(c2, q, cand.transpose(-1, -2), alpha=-2).add_(q2).clamp_min_(1e-30).sqrt_()
        if not any(ctx.needs_input_grad[:2]):
            return dist.neg_().add_(gamma)
        ctx.save_for_backward(q, cand, dist)
        return torch.sub(gamma, dist)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor, Tensor, None]:
        q, cand, dist = ctx.saved_tensors
        w = (grad / dist).masked_fill_(dist <= 1e-15, 0.0)
        gq = torch.baddbmm(q * -w.sum(-1, keepdim=True), w, cand)
        gc = torch.baddbmm(cand * -w.sum(-2).unsqueeze(-1), w.transpose(-1, -2), q)
        return gq, gc, None


class TransE_l2(_QueryModel):
    """gamma - ||h + r - t||_2."""

    name = "TransE_l2"

    def query_tail(self, h: Tensor, rel: tuple[Tensor, ...]) -> Tensor:
        return h + rel[0]

    def query_head(self, t: Tensor, rel: tuple[Tensor, ...]) -> Tensor:
        return t - rel[0]

    def match(self, q: Tensor, cand: Tensor) -> Tensor:
        return _PairwiseL2Score.apply(q, cand, self.gamma)

    def match_pairs(self, q: Tensor, x: Tensor) -> Tensor:
        return self.gamma - torch.linalg.vector_norm(q - x, ord=2, dim=-1)


class TransE_l1(TransE_l2):
    """gamma - ||h + r - t||_1."""

    name = "TransE_l1"

    def match(self, q: Tensor, cand: Tensor) -> Tensor:
        return self.gamma - torch.cdist(q, cand, p=1)

    def match_pairs(self, q: Tensor, x: Tensor) -> Tensor:
        return self.gamma - (q - x).abs().sum(-1)


class DistMult(_Dot):
    """<h, r, t> = sum(h * r * t)."""

    name = "DistMult"

    def query_tail(self, h: Tensor, rel: tuple[Tensor, ...]) -> Tensor:
        return h * rel[0]

    def query_head(self, t: Tensor, rel: tuple[Tensor, ...]) -> Tensor:
        return t * rel[0]


class ComplEx(_Dot):
    """Re(<h, r, conj(t)>) with real and imaginary parts in the two halves of each vector."""

    name = "ComplEx"

    def query_tail(self, h: Tensor, rel: tuple[Tensor, ...]) -> Tensor:
        hr, hi = _halves(h)
        rr, ri = _halves(rel[0])
        return torch.cat([hr * rr - hi * ri, hr * ri + hi * rr], -1)

    def query_head(self, t: Tensor, rel: tuple[Tensor, ...]) -> Tensor:
        tr, ti = _halves(t)
        rr, ri = _halves(rel[0])
        return torch.cat([rr * tr + ri * ti, rr * ti - ri * tr], -1)


class RESCAL(_Dot):
    """h^T M_r t with a full (d x d) matrix per relation."""

    name = "RESCAL"

    def _mat(self, m: Tensor) -> Tensor:
        return m.reshape(*m.shape[:-1], self.relation_dim, self.entity_dim)

    def query_tail(self, h: Tensor, rel: tuple[Tensor, ...]) -> Tensor:
        return torch.matmul(h.unsqueeze(-2), self._mat(rel[0])).squeeze(-2)

    def query_head(self, t: Tensor, rel: tuple[Tensor, ...]) -> Tensor:
        return torch.matmul(self._mat(rel[0]), t.unsqueeze(-1)).squeeze(-1)


class SimplE(_Dot):
    """clamp(0.5 (<h_i, r, t_j> + <t_i, r_inv, h_j>), +-20): halves are (i, j) and (r, r_inv)."""

    name = "SimplE"
    scale = 0.5
    clamp = 20.0

    def query_tail(self, h: Tensor, rel: tuple[Tensor, ...]) -> Tensor:
        hi, hj = _halves(h)
        r, rinv = _halves(rel[0])
        return torch.cat([hj * rinv, hi * r], -1)

    def query_head(self, t: Tensor, rel: tuple[Tensor, ...]) -> Tensor:
        ti, tj = _halves(t)
        r, rinv = _halves(rel[0])
        return torch.cat([r * tj, rinv * ti], -1)


class RotatE(_QueryModel):
    """gamma - sum_k |h_k e^{i theta_k} - t_k|, theta = r / (emb_init / pi); entities are complex."""

    name = "RotatE"
    pairwise_temporaries = True

    def _rotation(self, r: Tensor) -> tuple[Tensor, Tensor]:
        phase = r * (math.pi / self.emb_init)
        return torch.cos(phase), torch.sin(phase)

    def query_tail(self, h: Tensor, rel: tuple[Tensor, ...]) -> Tensor:
        hr, hi = _halves(h)
        c, s = self._rotation(rel[0])
        return torch.cat([hr * c - hi * s, hr * s + hi * c], -1)

    def query_head(self, t: Tensor, rel: tuple[Tensor, ...]) -> Tensor:
        tr, ti = _halves(t)
        c, s = self._rotation(rel[0])
        return torch.cat([tr * c + ti * s, ti * c - tr * s], -1)

    @staticmethod
    def _modulus_sum(re: Tensor, im: Tensor) -> Tensor:
        return (re * re + im * im).clamp_min(1e-30).sqrt().sum(-1)

    def match(self, q: Tensor, cand: Tensor) -> Tensor:
        qr, qi = _halves(q.unsqueeze(-2))
        cr, ci = _halves(cand.unsqueeze(-3))
        return self.gamma - self._modulus_sum(qr - cr, qi - ci)

    def match_pairs(self, q: Tensor, x: Tensor) -> Tensor:
        qr, qi = _halves(q)
        xr, xi = _halves(x)
        return self.gamma - self._modulus_sum(qr - xr, qi - xi)


class TransR(KGEModel):
    """gamma - ||h M_r + r - t M_r||_1 with a projection matrix M_r (entity_dim x relation_dim)."""

    name = "TransR"
    pairwise_temporaries = True

    def init_range(self, table: str) -> float:
        return 1.0 if table == "projection" else self.emb_init

    def _project(self, x: Tensor, m: Tensor) -> Tensor:
        """x (..., de) times its own matrix (..., de*dr) -> (..., dr)."""
        return torch.matmul(x.unsqueeze(-2), m.reshape(*m.shape[:-1], self.entity_dim, self.relation_dim)).squeeze(-2)

    def _project_all(self, cand: Tensor, m: Tensor) -> Tensor:
        """Candidates (c, n, de) under each row's matrix (c, k, de*dr) -> (c, k, n, dr)."""
        mats = m.reshape(*m.shape[:-1], self.entity_dim, self.relation_dim)
        return torch.matmul(cand.unsqueeze(1), mats)

    def pair(self, h: Tensor, rel: tuple[Tensor, ...], t: Tensor) -> Tensor:
        r, m = rel
        return self.gamma - (self._project(h, m) + r - self._project(t, m)).abs().sum(-1)

    def tails(self, h: Tensor, rel: tuple[Tensor, ...], cand: Tensor) -> Tensor:
        r, m = rel
        q = self._project(h, m) + r
        return self.gamma - (q.unsqueeze(-2) - self._project_all(cand, m)).abs().sum(-1)

    def heads(self, cand: Tensor, rel: tuple[Tensor, ...], t: Tensor) -> Tensor:
        r, m = rel
        q = self._project(t, m) - r
        return self.gamma - (self._project_all(cand, m) - q.unsqueeze(-2)).abs().sum(-1)


MODELS: dict[str, type[KGEModel]] = {m.name: m for m in (TransE_l1, TransE_l2, DistMult, ComplEx, RESCAL,
                                                           TransR, RotatE, SimplE)}
assert tuple(MODELS) == MODEL_NAMES, "kge.config.MODEL_NAMES lists the models defined here"


def create_model(name: str, hidden_dim: int, gamma: float, double_ent: bool = False,
                 double_rel: bool = False) -> KGEModel:
    """Build a score function by DGL-KE model name (`TransE` means TransE_l2, as in DGL-KE)."""
    return MODELS[check_model(name, hidden_dim, double_ent, double_rel)](hidden_dim, gamma, double_ent, double_rel)
