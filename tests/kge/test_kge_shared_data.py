"""The public benchmarks in the shared data folder load as DGL-KE loads them (skipped when absent)."""

import io
from pathlib import Path

import pytest

from distgraph.kge import TrainConfig, train_kge
from distgraph.kge.data.formats import load_dataset

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"


def _need(name):
    if not (SHARED / name / "train.txt").is_file():
        pytest.skip(f"{SHARED / name} is not available")


@pytest.mark.parametrize("name, counts", [
    ("FB15k-237", (14541, 237, 272115, 17535, 20466)),
    ("wn18", (40943, 18, 141442, 5000, 5000)),
])
def test_builtin_datasets_load_with_published_sizes(name, counts):
    _need(name)
    d = load_dataset(SHARED, name)
    assert (d.n_entities, d.n_relations, len(d.train), len(d.valid), len(d.test)) == counts
    assert d.train.max(0).tolist() < [d.n_entities, d.n_relations, d.n_entities]


def test_fb15k237_trains_with_the_benchmark_settings(tmp_path):
    _need("FB15k-237")
    cfg = TrainConfig(model_name="TransE_l2", dataset="FB15k-237", data_path=str(SHARED), hidden_dim=200,
                      gamma=19.9, lr=0.25, batch_size=1000, neg_sample_size=200, neg_adversarial_sampling=True,
                      regularization_coef=1e-9, max_step=40, log_interval=20, save_path=str(tmp_path))
    out = io.StringIO()
    res = train_kge(cfg, out=out)
    assert res.triples_per_s > 0 and "[0][Train](40/40)" in out.getvalue()
    assert (res.save_dir / "FB15k-237_TransE_l2_entity.npy").is_file()
