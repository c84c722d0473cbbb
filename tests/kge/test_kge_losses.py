"""DGL-KE's `--loss_genre` (Logsigmoid, Logistic, BCE, Hinge with `--margin`) and `--pairwise`
losses, against a reference written here from DGL-KE's `LossGenerator` (its label-based
criteria, computed literally), values and gradients; and trained end to end."""

import io
import re

import pytest
import torch
import torch.nn.functional as F

from distgraph.kge import train_kge
from distgraph.kge.train.loss import kge_loss
from test_kge_train import _config


def _dglke_criterion(genre: str, margin: float):
    """DGL-KE's loss of `score` with `label` (1 for positives; -1, or 0 for BCE, for negatives)."""
    if genre == "Hinge":
        def hinge(score, label):
            loss = margin - label * score
            return torch.where(loss < 0, torch.zeros_like(loss), loss)
        return hinge
    if genre == "Logistic":
        return lambda score, label: F.softplus(-label * score)
    if genre == "BCE":
        return lambda score, label: -(label * torch.log(torch.sigmoid(score))
                                      + (1 - label) * torch.log(1 - torch.sigmoid(score)))
    return lambda score, label: -F.logsigmoid(label * score)


def _dglke_loss(pos, neg, genre, margin, adversarial, temperature, pairwise, weight):
    """DGL-KE's `LossGenerator.get_total_loss`: `neg` is (positives, negatives)."""
    crit = _dglke_criterion(genre, margin)
    w = 1 if weight is None else weight.view(-1, 1)
    if pairwise:
        return torch.mean(crit(pos.unsqueeze(-1) - neg, 1) * w), None, None
    w_pos = 1 if weight is None else weight
    pos_loss = crit(pos, 1) * w_pos
    neg_loss = crit(neg, 0 if genre == "BCE" else -1) * w
    if adversarial:
        neg_loss = torch.sum(torch.softmax(neg * temperature, dim=-1).detach() * neg_loss, dim=-1)
    else:
        neg_loss = torch.mean(neg_loss, dim=-1)
    neg_loss, pos_loss = torch.mean(neg_loss), torch.mean(pos_loss)
    return (neg_loss + pos_loss) / 2, pos_loss, neg_loss


CASES = [(genre, adv, False) for genre in ("Logsigmoid", "Logistic", "BCE", "Hinge") for adv in (False, True)]
CASES += [("Hinge", False, True), ("Logistic", False, True)]


@pytest.mark.parametrize("genre, adversarial, pairwise", CASES)
@pytest.mark.parametrize("weighted", [False, True])
def test_losses_and_gradients_match_dglke(genre, adversarial, pairwise, weighted):
    g = torch.Generator().manual_seed(7)
    chunks, k, n = 3, 4, 5
    pos = (torch.randn(chunks * k, generator=g, dtype=torch.float64) * 3).requires_grad_()
    neg = (torch.randn(chunks, k, n, generator=g, dtype=torch.float64) * 3).requires_grad_()
    weight = torch.rand(chunks * k, generator=g, dtype=torch.float64) + 0.5 if weighted else None
    margin, temperature = 1.5, 0.7
    got = kge_loss(pos, neg, adversarial, temperature, importance=weight, genre=genre, margin=margin,
                   pairwise=pairwise)
    ref_pos, ref_neg = pos.detach().clone().requires_grad_(), neg.detach().clone().requires_grad_()
    want = _dglke_loss(ref_pos, ref_neg.reshape(chunks * k, n), genre, margin, adversarial, temperature, pairwise,
                       weight)
    assert got[0].item() == pytest.approx(want[0].item(), rel=1e-12)
    if pairwise:  # DGL-KE logs the loss alone
        assert torch.isnan(got[1]) and torch.isnan(got[2])
    else:
        assert (got[1].item(), got[2].item()) == (pytest.approx(want[1].item(), rel=1e-12),
                                                  pytest.approx(want[2].item(), rel=1e-12))
    got[0].backward()
    want[0].backward()
    assert torch.allclose(pos.grad, ref_pos.grad, rtol=1e-10, atol=1e-14)
    assert torch.allclose(neg.grad, ref_neg.grad, rtol=1e-10, atol=1e-14)
    assert pos.grad.abs().sum() > 0 and neg.grad.abs().sum() > 0


def test_genres_differ_where_dglke_says_they_do():
    pos, neg = torch.tensor([2.0, -1.0]), torch.tensor([[[0.5, -3.0], [1.0, 0.0]]])
    logsig = kge_loss(pos, neg)[0]
    assert kge_loss(pos, neg, genre="Logistic")[0] == pytest.approx(float(logsig))  # the same function
    assert kge_loss(pos, neg, genre="BCE")[0] == pytest.approx(float(logsig))
    hinge = kge_loss(pos, neg, genre="Hinge", margin=1.0)
    # positives: max(0, 1 - 2) = 0 and max(0, 1 + 1) = 2; negatives: max(0, 1 + s)
    assert float(hinge[1]) == pytest.approx(1.0) and float(hinge[2]) == pytest.approx((1.5 + 0 + 2 + 1) / 4)
    assert float(kge_loss(pos, neg, genre="Hinge", margin=3.0)[0]) > float(hinge[0])
    pairwise = kge_loss(pos, neg, genre="Hinge", margin=1.0, pairwise=True)[0]
    # each positive against its own negatives: max(0, 1 - (pos - neg))
    assert float(pairwise) == pytest.approx((0 + 0 + 3 + 2) / 4)


def test_masked_negatives_are_left_out_of_pairwise_losses():
    pos, neg = torch.tensor([1.0, 1.0]), torch.tensor([[[0.0, 5.0], [5.0, 0.0]]])
    mask = torch.tensor([[[True, False], [False, True]]])  # each positive's own entity is not its negative
    assert float(kge_loss(pos, neg, mask=mask, genre="Hinge", margin=2.0, pairwise=True)[0]) == pytest.approx(1.0)


@pytest.mark.parametrize("flags", [dict(loss_genre="Hinge", pairwise=True, margin=4.0),
                                   dict(loss_genre="Logistic", pairwise=True),
                                   dict(loss_genre="BCE", neg_adversarial_sampling=True)])
def test_training_with_each_loss_learns_the_planted_pairs(tmp_path, flags):
    flags = {"neg_adversarial_sampling": False, **flags}
    out = io.StringIO()
    res = train_kge(_config(tmp_path, max_step=300, no_save_emb=True, **flags), out=out)
    assert res.metrics["Test"]["MRR"] > 0.8, out.getvalue()
    logged = re.search(r"\[0\]\[Train\]\(300/300\) average (.*);", out.getvalue()).group(1)
    assert ("pos_loss" in logged) != flags.get("pairwise", False), logged  # a pairwise loss has one term
