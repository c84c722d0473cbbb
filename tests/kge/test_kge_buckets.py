"""Training with the entity table on disk (PyTorch-BigGraph's buckets): the buckets hold every
triple once by (head partition, tail partition); the visiting order shares a partition between
consecutive buckets; P = 1 trains exactly as the in-memory trainer does (same tables, same test
metrics); P = 4 learns a planted structure as well as the in-memory trainer; a resumed run
equals an uninterrupted one; P is chosen from a memory budget, or the budget is refused."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
import torch

from distgraph.errors import InputError
from distgraph.kge.config import TrainConfig
from distgraph.kge.data.formats import load_dataset
from distgraph.kge.pipeline import train_kge
from distgraph.kge.saved_model import load_model
from distgraph.kge.train.bucket_trainer import BucketTrainer, EvalData
from distgraph.kge.train.buckets import BucketLayout, bucket_order, build_buckets, choose_partitions


def planted(folder: Path, clusters: int = 50, size: int = 20, relations: int = 20, triples: int = 8000,
            seed: int = 0) -> Path:
    """A KG of typed relations (relation r links entities of cluster a_r to entities of cluster
    b_r, as "born in" links people to cities), which TransE learns: udd_hrt files, 90 % train."""
    rng = np.random.default_rng(seed)
    n = clusters * size
    members = rng.permutation(n).reshape(clusters, size)
    a, b = rng.integers(0, clusters, relations), rng.integers(0, clusters, relations)
    r = rng.integers(0, relations, triples)
    rows = np.stack([members[a[r], rng.integers(0, size, triples)], r, members[b[r], rng.integers(0, size, triples)]],
                    1)
    rows = np.unique(rows, axis=0)
    rows = rows[rng.permutation(len(rows))]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "entities.dict").write_text("".join(f"{i}\te{i}\n" for i in range(n)))
    (folder / "relations.dict").write_text("".join(f"{i}\tr{i}\n" for i in range(relations)))
    cut = [int(len(rows) * 0.9), int(len(rows) * 0.95)]
    for name, part in zip(("train", "valid", "test"), np.split(rows, cut)):
        (folder / f"{name}.txt").write_text("".join(f"{h}\t{r}\t{t}\n" for h, r, t in part))
    return folder


def _cfg(data: Path, tmp: Path, **kw) -> TrainConfig:
    base = dict(model_name="TransE_l2", dataset="planted", data_path=str(data), format="udd_hrt",
                data_files=["entities.dict", "relations.dict", "train.txt", "valid.txt", "test.txt"],
                save_path=str(tmp / "save"), max_step=600, batch_size=256, neg_sample_size=32, hidden_dim=16,
                gamma=6.0, lr=0.25, log_interval=10_000, test=True, batch_size_eval=64, seed=3)
    return TrainConfig(**{**base, **kw})


def test_buckets_hold_every_triple_once_by_partition_ordered_by_tail(tmp_path):
    rng = np.random.default_rng(0)
    train = np.stack([rng.integers(0, 100, 5000), rng.integers(0, 9, 5000), rng.integers(0, 100, 5000)], 1)
    lay = build_buckets(train.astype(np.int32), 100, 3, tmp_path, importance=np.arange(5000, dtype=np.float32),
                        chunk=700)
    assert BucketLayout.load(tmp_path).offsets.tolist() == lay.offsets.tolist()
    got, weights = [], []
    for i in range(3):
        for j in range(3):
            rows, w = lay.triples((i, j)), lay.importance((i, j))
            assert (lay.part_of(rows[:, 0]) == i).all() and (lay.part_of(rows[:, 2]) == j).all()
            assert (np.diff(rows[:, 2]) >= 0).all()  # by tail
            got.append(rows)
            weights.append(w)
    got, weights = np.concatenate(got), np.concatenate(weights)
    assert np.array_equal(train[weights.astype(np.int64)], got)  # each triple once, its weight with it
    same_tail = got[:-1, 2] == got[1:, 2]
    same_bucket = lay.part_of(got[:-1, 0]) == lay.part_of(got[1:, 0])
    assert (np.diff(weights)[same_tail & same_bucket] > 0).all()  # within a tail, the input's order


def test_every_bucket_once_consecutive_ones_share_a_partition():
    for p in (1, 2, 5):
        order = bucket_order(p, 0, 7)
        assert sorted(order) == [(i, j) for i in range(p) for j in range(p)]
        assert all(set(a) & set(b) for a, b in zip(order, order[1:]))
        assert bucket_order(p, 0, 7) == order
    assert bucket_order(5, 1, 7) != bucket_order(5, 0, 7)


def test_one_partition_trains_exactly_as_the_table_in_memory(tmp_path):
    data_dir = planted(tmp_path / "data")
    cfg = _cfg(data_dir, tmp_path, valid=True, eval_interval=10_000)
    result = train_kge(cfg, out=io.StringIO())
    saved = load_model(result.save_dir)
    data = load_dataset(cfg.data_path, cfg.dataset, cfg.format, cfg.data_files)
    lay = build_buckets(data.train, data.n_entities, 1, tmp_path / "work" / "buckets")
    events = []
    trainer = BucketTrainer(cfg, lay, data.n_relations, tmp_path / "work", events.append,
                            EvalData(data.valid, data.test))
    trainer.run()
    tables = {}
    trainer.finish(tables.update)
    assert np.array_equal(np.concatenate(list(tables["entity"].blocks())), saved.tables["entity"])
    assert np.array_equal(tables["relation"], saved.tables["relation"])
    test = next(e[3] for e in events if e[0] == "metrics" and e[2] == "Test")
    ours = {k: test[k] / test["count"] for k in ("MRR", "MR", "HITS@1")}
    assert ours == pytest.approx({k: result.metrics["Test"][k] for k in ours}, rel=1e-12)


def test_four_partitions_learn_the_planted_structure_as_the_table_in_memory(tmp_path):
    data_dir = planted(tmp_path / "data")
    in_memory = train_kge(_cfg(data_dir, tmp_path), out=io.StringIO()).metrics["Test"]["MRR"]
    out = io.StringIO()
    on_disk = train_kge(_cfg(data_dir, tmp_path, num_entity_partitions=4), out=out)
    assert "on disk in 4 partitions" in out.getvalue() and "4 x 4 buckets" in out.getvalue()
    untrained = train_kge(_cfg(data_dir, tmp_path, max_step=1, num_entity_partitions=4),
                          out=io.StringIO()).metrics["Test"]["MRR"]
    mrr = on_disk.metrics["Test"]["MRR"]
    assert mrr > 10 * untrained and mrr > 0.25, (mrr, untrained)  # (0.37 and 0.018 when written)
    assert abs(mrr - in_memory) < 0.05, (mrr, in_memory)
    assert not list((tmp_path / "save").glob(".buckets-*"))  # the temporary buckets are gone


def test_a_resumed_bucket_run_equals_an_uninterrupted_one(tmp_path):
    data_dir = planted(tmp_path / "data")
    whole = _cfg(data_dir, tmp_path, num_entity_partitions=3, test=False, checkpoint_dir=str(tmp_path / "ck"),
                 checkpoint_interval=40)
    first = load_model(train_kge(whole, out=io.StringIO()).save_dir)
    checkpoints = sorted((tmp_path / "ck").glob("step-*"))
    assert len(checkpoints) == 2  # the newest two
    resumed_out = io.StringIO()
    resumed = load_model(train_kge(TrainConfig(**{**whole.to_dict(), "resume": True}), out=resumed_out).save_dir)
    assert f"Resume from {checkpoints[-1]}" in resumed_out.getvalue()
    for name in ("entity", "relation"):
        assert np.array_equal(first.tables[name], resumed.tables[name])


def test_a_new_run_in_the_same_bucket_dir_starts_from_the_initial_rows(tmp_path):
    """--bucket_dir keeps the buckets for the next run, and the entity partitions the run trained:
    a new run there (no --resume) trains from the initialiser's rows, as the first one did."""
    data_dir = planted(tmp_path / "data")
    cfg = _cfg(data_dir, tmp_path, num_entity_partitions=3, test=False, max_step=200,
               bucket_dir=str(tmp_path / "buckets"))
    first = load_model(train_kge(cfg, out=io.StringIO()).save_dir).tables["entity"].copy()
    assert list((tmp_path / "buckets" / "entities").glob("entity.*"))  # what the first run left
    again = load_model(train_kge(cfg, out=io.StringIO()).save_dir).tables["entity"]
    assert np.array_equal(first, again)


def test_the_memory_budget_chooses_p_or_is_refused():
    fits = choose_partitions(1, 1.0, 1000, 10_000, 100, 4000)
    assert fits.num_parts == 1 and "in memory" in fits.why
    chosen = choose_partitions(1, 0.5, 2_000_000, 10_000_000, 100, 40_000)  # 808 MB of rows and state
    assert chosen.num_parts > 1 and f"P = {chosen.num_parts}" in chosen.why
    rows = -(-2_000_000 // chosen.num_parts) * 101 * 4
    assert 3 * rows <= 0.5 * 2**30
    with pytest.raises(InputError, match="too small"):
        choose_partitions(1, 0.0001, 2_000_000, 10_000_000, 100, 40_000_000)


def test_bucket_training_refuses_several_processes_in_one_line(tmp_path):
    data_dir = planted(tmp_path / "data", triples=500)
    with pytest.raises(InputError, match="runs in one process: drop --num_proc 2"):
        train_kge(_cfg(data_dir, tmp_path, num_entity_partitions=2, num_proc=2), out=io.StringIO())
    assert not (tmp_path / "save").exists() or not list((tmp_path / "save").iterdir())
    assert torch.get_num_threads() >= 1


def test_partitions_are_made_where_first_needed_and_written_when_first_written_back(tmp_path):
    """No start-up pass writes the table: a partition's initial rows are made when it is first
    read into memory (or read for ranking), its files written with its first write-back, and a
    partition never trained keeps no file and reads as the initialiser's rows."""
    from distgraph.distributed.initializers import Uniform
    from distgraph.kvstore import initializers
    from distgraph.kge.train.partitions import EntityPartitions

    bounds, dim, spec = np.array([0, 5, 9, 14, 20]), 3, Uniform(-1.0, 1.0, 7).spec()
    whole = torch.empty(20, dim)
    initializers.fill(whole, 0, spec)  # the table as the runtime would initialise it in memory
    parts = EntityPartitions(tmp_path, bounds, dim, spec, lr=0.5)
    assert list(tmp_path.iterdir()) == []
    assert torch.equal(parts.read(2), whole[9:14])
    parts.use({0, 1}, then={3})
    assert torch.equal(parts.gather(torch.tensor([1, 7])), whole[[1, 7]])
    parts.update(torch.tensor([1, 7]), torch.ones(2, dim))
    parts.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["entity.0", "entity.1", "entity_state.0", "entity_state.1"]
    again = EntityPartitions(tmp_path, bounds, dim, spec, lr=0.5)
    trained = again.read(0)
    assert not torch.equal(trained[1], whole[1]) and torch.equal(trained[[0, 2, 3, 4]], whole[[0, 2, 3, 4]])
    assert torch.equal(again.read(3), whole[14:20])  # read ahead, never trained: still the initialiser's


def test_reading_every_partition_after_training_takes_no_memory_beyond_the_slots(tmp_path):
    """Ranking and saving read the partitions in turn into the training slots (no buffer of its
    own per partition): the rows read are each partition's current rows, a changed partition is
    written back before its slot is reused, and a partition read and then trained keeps its rows."""
    from distgraph.distributed.initializers import Uniform
    from distgraph.kvstore import initializers
    from distgraph.kge.train.partitions import EntityPartitions

    bounds, dim, spec = np.array([0, 4, 8, 12, 16, 20]), 3, Uniform(-1.0, 1.0, 3).spec()
    whole = torch.empty(20, dim)
    initializers.fill(whole, 0, spec)
    parts = EntityPartitions(tmp_path, bounds, dim, spec, lr=0.5)
    slot_buffers = {t.data_ptr() for t, _ in parts.slots}
    parts.use({0, 1}, then={2})
    parts.update(torch.tensor([1, 5]), torch.ones(2, dim))
    changed = parts.gather(torch.tensor([1, 5]))
    parts.use({1, 2})
    parts.flush()  # as a validation between buckets does
    seen = [parts.read(p).clone() for p in (3, 0, 4, 1, 2)]
    assert all(parts._view(p)[0].data_ptr() in slot_buffers for p in parts.held)
    assert len(parts.held) <= len(parts.slots) == 3
    assert torch.equal(seen[1][1], changed[0]) and torch.equal(seen[3][1], changed[1])
    assert torch.equal(seen[0], whole[12:16]) and torch.equal(seen[2], whole[16:20]) and torch.equal(seen[4], whole[8:12])
    # 2 was in memory but never changed: like 3 and 4, it keeps no file
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{k}.{p}" for k in ("entity", "entity_state") for p in (0, 1)]
    parts.use({3, 4})  # trained after a read made 4 resident as the initialiser's rows
    parts.update(torch.tensor([17]), torch.ones(1, dim))
    after = parts.gather(torch.tensor([17]))
    parts.read(0), parts.read(1), parts.read(2)  # 4 is written back to make room
    assert torch.equal(parts.read(4)[1], after[0])
    parts.close()


def test_partition_slots_are_whole_pages_in_2mb_pages_and_their_files_move_past_the_page_cache(tmp_path, monkeypatch):
    """The slots start on a page, hold whole pages of rows, are advised 2 MB pages (the step reads
    and updates random rows), and a partition's files are written and read with O_DIRECT: the
    rows come back as they were, in files of their exact size."""
    import os

    from distgraph import direct_io
    from distgraph.distributed.initializers import Uniform
    from distgraph.kge.train.partitions import EntityPartitions
    from memcap import mapping_flags

    bounds, dim = np.array([0, 3000, 6001]), 100  # 3.4 MB of slots: past the 2 MB pages' threshold
    parts = EntityPartitions(tmp_path, bounds, dim, Uniform(-1.0, 1.0, 5).spec(), lr=0.5)
    assert parts.slot_rows == 3072 and parts._emb.data_ptr() % direct_io.ALIGN == 0
    thp = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    if thp.is_file() and "[never]" not in thp.read_text():
        assert "hg" in mapping_flags(parts._emb.data_ptr())  # (the accumulators, 24 kB here, are too few)
    flags, real = [], os.open
    monkeypatch.setattr(direct_io.os, "open", lambda path, f, *a: flags.append(f) or real(path, f, *a))
    parts.use({0, 1})
    parts.update(torch.tensor([5, 4000]), torch.ones(2, dim))
    trained = parts.gather(torch.tensor([5, 4000, 6000]))
    parts.close()
    assert os.path.getsize(tmp_path / "entity.1") == 3001 * dim * 4
    again = EntityPartitions(tmp_path, bounds, dim, Uniform(-1.0, 1.0, 5).spec(), lr=0.5)
    again.use({0, 1})
    assert torch.equal(again.gather(torch.tensor([5, 4000, 6000])), trained)
    again.close()
    assert len(flags) == 8 and all(f & direct_io._DIRECT for f in flags) if direct_io._DIRECT else flags


def test_buckets_are_built_from_the_triples_file_without_mapping_it(tmp_path):
    """`kge train` builds the buckets from the loader's memory-mapped triples read as a file (a
    mapping read whole stays resident through training): the same buckets as from the array."""
    from distgraph.data.file_array import FileArray, unmapped

    rng = np.random.default_rng(3)
    triples = np.stack([rng.integers(0, 500, 5000), rng.integers(0, 7, 5000), rng.integers(0, 500, 5000)], 1)
    np.save(tmp_path / "train.npy", triples.astype(np.int32))
    mapped = np.load(tmp_path / "train.npy", mmap_mode="r")
    assert isinstance(unmapped(mapped), FileArray) and unmapped(triples) is triples
    read = build_buckets(unmapped(mapped), 500, 3, tmp_path / "read", chunk=777)
    held = build_buckets(triples, 500, 3, tmp_path / "held", chunk=777)
    assert np.array_equal(read.offsets, held.offsets)
    assert all(np.array_equal(read.triples((i, j)), held.triples((i, j))) for i in range(3) for j in range(3))


def test_machines_partitions_become_slot_rows_of_the_partitions_held():
    """Across machines (`dist_buckets`): each machine's range in Q partitions, and an entity id
    maps to its row in its machine's slot, for partitions held only."""
    from distgraph.kge.train.dist_buckets import SlotMap, stage_plan

    plan = stage_plan(_cfg(Path("."), Path("."), num_entity_partitions=3), [(0, 10), (10, 17)], 100, 16, 0)
    assert plan.bounds.tolist() == [0, 3, 6, 10, 12, 14, 17] and (plan.slots, plan.slot_rows) == (3, 1024)
    assert plan.table_rows == 6 * 1024 and "each machine's share of the entity table (up to 10 entities)" in plan.why
    slots = SlotMap(plan)
    slots.set({0: {0: 2, 2: 0}, 1: {0: 1, 2: 2}})
    r = plan.slot_rows  # (whole pages of rows: 4 rounded up)
    assert slots(torch.tensor([0, 2, 6, 9, 10, 16])).tolist() == [2 * r, 2 * r + 2, 0, 3, 4 * r, 5 * r + 2]
    assert slots.window(1, 2) == [2 * r, 3, 14]  # rows 2r.. of machine 1's share hold entities 14..16
    with pytest.raises(InputError, match="outside the partitions the machines hold"):
        slots(torch.tensor([4]))  # machine 0's partition 1 is on its disk
    assert stage_plan(_cfg(Path("."), Path(".")), [(0, 10), (10, 17)], 100, 16, 0) is None  # in memory
    with pytest.raises(InputError, match="more than a machine's 3 entities"):
        stage_plan(_cfg(Path("."), Path("."), num_entity_partitions=4), [(0, 10), (10, 13)], 100, 16, 0)
