"""Chunked sampling, training on a planted knowledge graph, saving, reloading and multi-process runs."""

import io
import json
import multiprocessing

import numpy as np
import pytest
import torch

from distgraph.errors import DistGraphError, InputError
from distgraph.kge import EvalConfig, TrainConfig, eval_kge, train_kge
from distgraph.kge.saved_model import load_model
from distgraph.kge.train.sampler import ChunkSampler, chunk_layout

DOUBLE = {"ComplEx": (True, True), "SimplE": (True, True), "RotatE": (True, False)}


def planted_pairs(root, n=150, held_out=30, seed=0):
    """2n entities matched in pairs: (h, to, t) for every pair and its inverse (t, back, h); the
    test and valid triples are inverses whose forward triple is in training, so they are predictable."""
    g = np.random.default_rng(seed)
    perm = g.permutation(2 * n)
    heads, tails = perm[:n], perm[n:]
    fwd = [(f"e{h}", "to", f"e{t}") for h, t in zip(heads, tails)]
    inv = [(f"e{t}", "back", f"e{h}") for h, t in zip(heads, tails)]
    split = {"test.txt": inv[:held_out], "valid.txt": inv[held_out:2 * held_out],
             "train.txt": fwd + inv[2 * held_out:]}
    for name, rows in split.items():
        (root / name).write_text("".join("\t".join(r) + "\n" for r in rows))
    return ["train.txt", "valid.txt", "test.txt"]


def _config(tmp_path, model="TransE_l2", **kw):
    files = planted_pairs(tmp_path)
    de, dr = DOUBLE.get(model, (False, False))
    base = dict(model_name=model, dataset="planted", data_path=str(tmp_path), format="raw_udd_hrt",
                data_files=files, hidden_dim=32, gamma=4.0, lr=0.3, batch_size=256, neg_sample_size=32,
                max_step=300, log_interval=100, neg_adversarial_sampling=True, test=True,
                batch_size_eval=64, save_path=str(tmp_path / "ckpts"), double_ent=de, double_rel=dr)
    base.update(kw)
    return TrainConfig(**base)


def test_chunk_layout_rounds_batches_to_whole_chunks():
    assert chunk_layout(1000, 200, 10**6) == (1000, 200)
    assert chunk_layout(1000, 300, 10**6) == (1200, 300)  # DGL-KE's compatible batch size
    assert chunk_layout(100, 256, 10**6) == (100, 100)
    assert chunk_layout(1000, 200, 450) == (400, 200)
    with pytest.raises(InputError, match="--batch_size and --neg_sample_size must be positive"):
        chunk_layout(0, 5, 10)


def test_sampler_chunks_alternate_sides_and_cover_each_epoch():
    triples = torch.stack([torch.arange(100), torch.arange(100) % 3, torch.arange(100) + 1000], 1)
    s = ChunkSampler(triples, (0, 2000), batch_size=20, neg_sample_size=5, seed=0)
    seen, sides = [], []
    for _ in range(5):  # one epoch
        b = next(s)
        assert b.neg.shape == (4, 5) and b.neg.min() >= 0 and b.neg.max() < 2000
        assert torch.equal(b.t, b.h + 1000) and torch.equal(b.r, b.h % 3)
        seen.append(b.h)
        sides.append(b.corrupt_head)
    assert sides == [False, True, False, True, False]  # tails first, as DGL-KE
    assert sorted(torch.cat(seen).tolist()) == list(range(100))


def test_a_share_of_negatives_comes_from_all_entities_once_per_batch():
    """Distributed: most negatives from the machine's entities [100, 200), half from all 1000,
    one draw shared by the batch's chunks (those rows mostly live elsewhere: they travel once)."""
    triples = torch.stack([torch.arange(100, 200), torch.zeros(100, dtype=torch.long), torch.arange(100, 200)], 1)
    s = ChunkSampler(triples, (100, 200), batch_size=20, neg_sample_size=10, seed=0, num_entities=1000,
                     global_share=0.5)
    outside = 0
    for _ in range(20):
        b = next(s)
        assert b.neg.shape == (2, 10)
        assert ((b.neg[:, 5:] >= 100) & (b.neg[:, 5:] < 200)).all()
        assert (b.neg[:, :5] == b.neg[:1, :5]).all() and b.neg.min() >= 0 and b.neg.max() < 1000
        outside += int(((b.neg[0, :5] < 100) | (b.neg[0, :5] >= 200)).sum())
    assert outside > 60  # 90% of the 100 global draws fall outside the machine's range
    whole = ChunkSampler(triples, (0, 1000), batch_size=20, neg_sample_size=10, seed=0, num_entities=1000,
                         global_share=0.5)
    assert whole.num_global == 0  # on one machine every entity is local already


def test_degree_sampling_adds_the_chunk_entities_and_masks_each_own():
    triples = torch.stack([torch.arange(8), torch.zeros(8, dtype=torch.long), torch.arange(8) + 8], 1)
    s = ChunkSampler(triples, (0, 16), batch_size=4, neg_sample_size=2, neg_deg_sample=True, seed=0)
    b = next(s)  # tails corrupted: the chunk's own tails come first
    assert b.neg.shape == (2, 4)
    torch.testing.assert_close(b.neg[:, :2], b.t.view(2, 2))
    assert b.neg_mask.shape == (2, 2, 4)
    assert b.neg_mask[:, :, :2].tolist() == [[[False, True], [True, False]]] * 2
    assert b.neg_mask[:, :, 2:].all()


def test_planted_graph_is_learnt(tmp_path):
    out = io.StringIO()
    res = train_kge(_config(tmp_path), out=out)
    assert res.metrics["Test"]["MRR"] > 0.9
    text = out.getvalue()
    assert "[0][Train](100/300) average loss:" in text and "steps/s" in text
    assert "Test average MRR : " in text and "Test average HITS@10 : " in text
    assert res.triples_per_s > 0 and res.train_time > 0 and res.test_time > 0


@pytest.mark.parametrize("model", ["TransE_l1", "DistMult", "ComplEx", "RESCAL", "TransR", "RotatE", "SimplE"])
def test_every_model_learns_the_planted_graph(tmp_path, model):
    res = train_kge(_config(tmp_path, model, no_save_emb=True, log_interval=1000), out=io.StringIO())
    assert res.metrics["Test"]["MRR"] > 0.8  # random ranking gives about 0.02


def test_saved_model_layout_and_eval_reproduce_the_test_metrics(tmp_path):
    cfg = _config(tmp_path, regularization_coef=1e-7, neg_deg_sample=True)
    res = train_kge(cfg, out=io.StringIO())
    assert res.save_dir == tmp_path / "ckpts" / "TransE_l2_planted_0"
    files = sorted(p.name for p in res.save_dir.iterdir())
    assert files == ["config.json", "entities.dict", "entities.parquet", "planted_TransE_l2_entity.npy",
                     "planted_TransE_l2_relation.npy", "relations.dict", "relations.parquet"]
    conf = json.loads((res.save_dir / "config.json").read_text())
    assert conf["model_name"] == "TransE_l2" and conf["hidden_dim"] == 32 and conf["n_entities"] == 300
    assert np.load(res.save_dir / "planted_TransE_l2_entity.npy").shape == (300, 32)

    out = io.StringIO()
    again = eval_kge(EvalConfig(model_path=str(res.save_dir), batch_size_eval=7), out=out)
    for m in ("MRR", "MR", "HITS@1", "HITS@3", "HITS@10"):
        assert again.metrics["Test"][m] == pytest.approx(res.metrics["Test"][m])
    assert "Test average MRR : " in out.getvalue()
    # a second run gets the next folder number, as dglke_train numbers them
    assert train_kge(_config(tmp_path, max_step=1, test=False), out=io.StringIO()).save_dir.name.endswith("_1")


def test_transr_saves_its_projections(tmp_path):
    res = train_kge(_config(tmp_path, "TransR", hidden_dim=4, max_step=2, test=False), out=io.StringIO())
    assert (res.save_dir / "planted_TransRprojection.npy").is_file()
    saved = load_model(res.save_dir)
    assert saved.tables["projection"].shape == (2, 16)
    import pyarrow.parquet as pq

    rel = pq.read_table(res.save_dir / "relations.parquet")
    assert rel.column_names == ["id", "name", "emb", "projection"]
    np.testing.assert_array_equal(np.stack(rel.column("projection").to_numpy(zero_copy_only=False)),
                                  saved.tables["projection"])


def test_validation_during_training(tmp_path):
    out = io.StringIO()
    res = train_kge(_config(tmp_path, valid=True, eval_interval=150, test=False, no_save_emb=True), out=out)
    assert set(res.metrics) == {"Valid (step 150)", "Valid (step 300)"}
    assert "Valid average MRR : " in out.getvalue()


@pytest.mark.multiprocess
def test_two_hogwild_processes_train_and_test(tmp_path):
    res = train_kge(_config(tmp_path, num_proc=2, max_step=300, valid=True, eval_interval=300), out=io.StringIO())
    assert res.metrics["Test"]["MRR"] > 0.8
    assert "Valid (step 300)" in res.metrics
    assert multiprocessing.active_children() == []
    again = eval_kge(EvalConfig(model_path=str(res.save_dir), num_proc=2), out=io.StringIO())
    assert again.metrics["Test"]["MRR"] == pytest.approx(res.metrics["Test"]["MRR"])
    assert multiprocessing.active_children() == []


def test_test_flag_without_test_file_and_bad_settings(tmp_path):
    planted_pairs(tmp_path)
    cfg = _config(tmp_path, data_files=["train.txt"])
    with pytest.raises(InputError, match="--test needs test triples"):
        train_kge(cfg, out=io.StringIO())
    with pytest.raises(InputError, match="--num_proc must be a positive integer"):
        train_kge(_config(tmp_path, num_proc=0), out=io.StringIO())
    with pytest.raises(InputError, match="config.json does not exist"):
        eval_kge(EvalConfig(model_path=str(tmp_path)), out=io.StringIO())


def test_a_diverging_run_stops_naming_the_step(tmp_path):
    with pytest.raises(DistGraphError, match=r"the loss became nan at step \d+; lower --lr"):
        train_kge(_config(tmp_path, lr=1e30, regularization_coef=1e10, no_save_emb=True), out=io.StringIO())


def test_model_folders_after_a_deleted_one(tmp_path):
    first = train_kge(_config(tmp_path, max_step=2, test=False), out=io.StringIO()).save_dir
    second = train_kge(_config(tmp_path, max_step=2, test=False), out=io.StringIO()).save_dir
    import shutil

    shutil.rmtree(first)  # DGL-KE counted folders and collided with the survivor
    third = train_kge(_config(tmp_path, max_step=2, test=False), out=io.StringIO()).save_dir
    assert (first.name, second.name, third.name) == ("TransE_l2_planted_0", "TransE_l2_planted_1",
                                                     "TransE_l2_planted_2")


def test_sampled_partial_and_unfiltered_evaluation_and_eval_flags(tmp_path):
    res = train_kge(_config(tmp_path, max_step=200), out=io.StringIO())
    full = res.metrics["Test"]["MRR"]
    base = dict(model_path=str(res.save_dir), batch_size_eval=16)
    sampled = eval_kge(EvalConfig(**base, neg_sample_size_eval=20), out=io.StringIO()).metrics["Test"]
    assert sampled["MR"] <= 21 and sampled["MRR"] >= full - 1e-6  # fewer candidates cannot rank lower
    part = eval_kge(EvalConfig(**base, eval_percent=0.5), out=io.StringIO()).metrics["Test"]
    assert 0 < part["MRR"] <= 1
    unfiltered = eval_kge(EvalConfig(**base, no_eval_filter=True), out=io.StringIO()).metrics["Test"]
    assert unfiltered["MRR"] <= full + 1e-9  # known triples now count against the model
    by_degree = eval_kge(EvalConfig(**base, neg_sample_size_eval=20, neg_deg_sample_eval=True, no_eval_filter=True),
                         out=io.StringIO()).metrics["Test"]
    assert by_degree["MR"] <= 21
    assert eval_kge(EvalConfig(**base, model_name="TransE_l2", hidden_dim=32, gamma=4.0),
                    out=io.StringIO()).metrics["Test"]["MRR"] == pytest.approx(full)
    with pytest.raises(InputError, match=r"other settings than --hidden_dim 64 \(saved: 32\)"):
        eval_kge(EvalConfig(**base, hidden_dim=64), out=io.StringIO())


@pytest.mark.multiprocess
def test_relation_partitioning_sync_and_edge_importance(tmp_path):
    res = train_kge(_config(tmp_path, num_proc=2, rel_part=True, force_sync_interval=50), out=io.StringIO())
    assert res.metrics["Test"]["MRR"] > 0.5
    files = planted_pairs(tmp_path)
    rows = (tmp_path / files[0]).read_text().splitlines()
    (tmp_path / "weighted.txt").write_text("".join(f"{r}\t{1.0 + i % 3}\n" for i, r in enumerate(rows)))
    weighted = train_kge(_config(tmp_path, data_files=["weighted.txt", files[1], files[2]],
                                 has_edge_importance=True), out=io.StringIO())
    assert weighted.metrics["Test"]["MRR"] > 0.9
