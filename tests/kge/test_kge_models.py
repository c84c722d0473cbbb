"""Score functions, loss, regularisation and Adagrad against hand-computed values and finite differences."""

import math

import pytest
import torch

from distgraph.errors import InputError
from distgraph.kge.models import MODELS, create_model
from distgraph.kge.train.loss import add_regularization_grad, kge_loss
from distgraph.kvstore.kernels import row_adagrad

T = torch.tensor
DOUBLE = {"ComplEx": (True, True), "SimplE": (True, True), "RotatE": (True, False)}


def _model(name, hidden=4, gamma=3.0):
    de, dr = DOUBLE.get(name, (False, False))
    return create_model(name, hidden, gamma, de, dr)


def _rel(model, *lead, gen):
    return tuple(torch.randn(*lead, w, generator=gen, dtype=torch.float64) * 0.5
                 for w in model.relation_tables().values())


@pytest.mark.parametrize("name, kwargs, h, rel, t, expected", [
    # gamma - ||h + r - t||: h + r - t = (0.5, 1)
    ("TransE_l2", dict(gamma=3.0), [1.0, 2.0], ([0.5, -1.0],), [1.0, 0.0], 3.0 - math.sqrt(1.25)),
    ("TransE_l1", dict(gamma=3.0), [1.0, 2.0], ([0.5, -1.0],), [1.0, 0.0], 1.5),
    # 1*3*2 + 2*(-1)*1
    ("DistMult", {}, [1.0, 2.0], ([3.0, -1.0],), [2.0, 1.0], 4.0),
    # Re((1+2i)(3-i)conj(2+i)) = Re((5+5i)(2-i)) = 15
    ("ComplEx", {}, [1.0, 2.0], ([3.0, -1.0],), [2.0, 1.0], 15.0),
    # h . (M t) with M = [[1, 2], [3, 4]], t = (1, -1): M t = (-1, -1)
    ("RESCAL", {}, [1.0, 2.0], ([1.0, 2.0, 3.0, 4.0],), [1.0, -1.0], -3.0),
    # h M = (1, 4), t M = (0, 2), r = (1, 1): |(2, 3)|_1 = 5
    ("TransR", dict(gamma=6.0), [1.0, 2.0], ([1.0, 1.0], [1.0, 0.0, 0.0, 2.0]), [0.0, 1.0], 1.0),
    # 0.5 (h_i r t_j + t_i r_inv h_j) = 0.5 (1*3*1 + 2*(-1)*2)
    ("SimplE", {}, [1.0, 2.0], ([3.0, -1.0],), [2.0, 1.0], -0.5),
])
def test_pair_score_hand_computed(name, kwargs, h, rel, t, expected):
    model = create_model(name, 2, kwargs.get("gamma", 1.0))
    got = model.pair(T([h]), tuple(T([r]) for r in rel), T([t]))
    assert got.shape == (1,)
    assert got.item() == pytest.approx(expected, rel=1e-6)


def test_rotate_hand_computed():
    # hidden 1, -de: h = 1 + 0i, r rotates by r * pi / emb_init = 45 degrees (emb_init = (2 + 2) / 1)
    model = create_model("RotatE", 1, 2.0, double_ent=True)
    got = model.pair(T([[1.0, 0.0]]), (T([[1.0]]),), T([[0.0, 1.0]]))
    s = math.sqrt(0.5)
    assert got.item() == pytest.approx(2.0 - math.hypot(s - 0.0, s - 1.0), rel=1e-6)


def test_simple_is_clamped():
    model = create_model("SimplE", 2, 1.0)
    assert model.pair(T([[10.0, 10.0]]), (T([[10.0, 10.0]]),), T([[10.0, 10.0]])).item() == 20.0


@pytest.mark.parametrize("name", sorted(MODELS))
def test_candidate_scores_match_pair_scores(name):
    """tails/heads (c, k, n) equal pair() on every (positive, candidate) combination."""
    model = _model(name)
    gen = torch.Generator().manual_seed(1)
    c, k, n = 2, 3, 5
    h = torch.randn(c, k, model.entity_dim, generator=gen, dtype=torch.float64) * 0.5
    t = torch.randn(c, k, model.entity_dim, generator=gen, dtype=torch.float64) * 0.5
    cand = torch.randn(c, n, model.entity_dim, generator=gen, dtype=torch.float64) * 0.5
    rel = _rel(model, c, k, gen=gen)

    def expand(x):
        return x.unsqueeze(2).expand(c, k, n, x.shape[-1])

    cand_b = cand.unsqueeze(1).expand(c, k, n, model.entity_dim)
    rel_b = tuple(expand(r) for r in rel)
    torch.testing.assert_close(model.tails(h, rel, cand), model.pair(expand(h), rel_b, cand_b))
    torch.testing.assert_close(model.heads(cand, rel, t), model.pair(cand_b, rel_b, expand(t)))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_gradients_match_finite_differences(name):
    model = _model(name, hidden=2, gamma=2.0)
    gen = torch.Generator().manual_seed(2)

    def leaf(*shape):
        return (torch.randn(*shape, generator=gen, dtype=torch.float64) * 0.5).requires_grad_()

    de = model.entity_dim
    rel = tuple(r.requires_grad_() for r in _rel(model, 2, 3, gen=gen))
    h, t, cand = leaf(2, 3, de), leaf(2, 3, de), leaf(2, 4, de)
    assert torch.autograd.gradcheck(lambda h, t, *r: model.pair(h, r, t), (h, t, *rel))
    assert torch.autograd.gradcheck(lambda h, c, *r: model.tails(h, r, c), (h, cand, *rel))
    assert torch.autograd.gradcheck(lambda c, t, *r: model.heads(c, r, t), (cand, t, *rel))


def test_loss_hand_computed():
    pos, neg = T([2.0, -1.0]), T([[0.0, 1.0], [-2.0, 3.0]])
    ls = torch.nn.functional.logsigmoid
    loss, pl, nl = kge_loss(pos, neg)
    assert pl.item() == pytest.approx(-(ls(T(2.0)) + ls(T(-1.0))).item() / 2)
    assert nl.item() == pytest.approx(-ls(-neg).mean().item())
    assert loss.item() == pytest.approx((pl.item() + nl.item()) / 2)
    _, _, adv = kge_loss(pos, neg, adversarial=True, temperature=0.5)
    w = torch.softmax(neg * 0.5, -1)
    assert adv.item() == pytest.approx(-(w * ls(-neg)).sum(-1).mean().item())


def test_adversarial_weights_are_constants_in_the_gradient():
    """d neg_loss / d s_ij = w_ij sigmoid(s_ij) / rows with w = softmax(T s), held constant (DGL-KE's detach)."""
    neg = torch.randn(3, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0)).requires_grad_()
    _, _, nl = kge_loss(torch.zeros(3, dtype=torch.float64), neg, adversarial=True, temperature=2.0)
    nl.backward()
    w = torch.softmax(2.0 * neg.detach(), -1)
    torch.testing.assert_close(neg.grad, w * torch.sigmoid(neg.detach()) / 3)


def test_loss_mask_drops_negatives():
    neg = T([[5.0, 1.0, -1.0]])
    mask = T([[False, True, True]])
    for adv in (False, True):
        _, _, masked = kge_loss(T([0.0]), neg, adv, 1.0, mask)
        _, _, kept = kge_loss(T([0.0]), neg[:, 1:], adv, 1.0)
        assert masked.item() == pytest.approx(kept.item())


@pytest.mark.parametrize("norm", [1, 2, 3, 4])
def test_regularization_gradient_matches_autograd(norm):
    x = torch.randn(5, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(norm)).requires_grad_()
    (1e-2 * x.abs().pow(norm).sum()).backward()
    grad = torch.zeros_like(x)
    value = add_regularization_grad(x.detach(), grad, 1e-2, norm)
    torch.testing.assert_close(grad, x.grad)
    assert value.item() == pytest.approx(1e-2 * x.detach().abs().pow(norm).sum().item())


def test_row_adagrad_one_step_hand_computed():
    table = torch.zeros(3, 2)
    state = torch.full((3,), 1.0)
    row_adagrad(table, state, T([2, 0]), T([[3.0, 4.0], [0.0, 2.0]]), lr=0.5)
    # row 2: state 1 + (9 + 16) / 2 = 13.5; row 0: 1 + 4 / 2 = 3; row 1 untouched
    torch.testing.assert_close(state, T([3.0, 1.0, 13.5]))
    torch.testing.assert_close(table, T([[0.0, -1.0 / math.sqrt(3.0)], [0.0, 0.0],
                                         [-1.5 / math.sqrt(13.5), -2.0 / math.sqrt(13.5)]]))


def test_importance_weighs_each_positive_and_its_negatives():
    pos, neg, w = T([1.0, -2.0]), T([[0.5, -1.0], [2.0, 0.0]]), T([3.0, 0.0])
    _, pos_loss, neg_loss = kge_loss(pos, neg, importance=w)
    import torch.nn.functional as F
    assert pos_loss.item() == pytest.approx((-F.logsigmoid(T(1.0)) * 3.0 / 2).item())
    assert neg_loss.item() == pytest.approx((-F.logsigmoid(-neg[0]).mean() * 3.0 / 2).item())


def test_unknown_model_and_bad_dimensions_are_clear_errors():
    with pytest.raises(InputError, match="unknown --model_name 'TransX'.*TransE_l2"):
        create_model("TransX", 4, 1.0)
    with pytest.raises(InputError, match="RotatE.*-de"):
        create_model("RotatE", 4, 1.0)
    with pytest.raises(InputError, match="ComplEx.*even --hidden_dim"):
        create_model("ComplEx", 3, 1.0)
    with pytest.raises(InputError, match="DistMult.*both -de and -dr"):
        create_model("DistMult", 4, 1.0, double_ent=True)
    assert type(create_model("TransE", 4, 1.0)).__name__ == "TransE_l2"


def test_l2_candidates_at_zero_distance_get_no_gradient():
    model = create_model("TransE_l2", 2, 1.0)
    q = torch.tensor([[[1.0, 2.0]]], requires_grad=True)
    cand = torch.tensor([[[1.0, 2.0], [1.0, 3.0]]], requires_grad=True)
    s = model.match(q, cand)
    torch.testing.assert_close(s.detach(), torch.tensor([[[1.0, 0.0]]]), atol=1e-6, rtol=0)
    s.sum().backward()
    # only the second candidate (distance 1, along y) pulls: d(-||q - c||)/dq = -(q - c)/||q - c||
    torch.testing.assert_close(q.grad, torch.tensor([[[0.0, 1.0]]]))
    torch.testing.assert_close(cand.grad, torch.tensor([[[0.0, 0.0], [0.0, -1.0]]]))
