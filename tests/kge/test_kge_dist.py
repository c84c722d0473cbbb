"""Distributed KGE on loopback machines: `kge partition` (METIS keeps more triples on one
machine than random), `kge dist-train` reaching the single-machine MRR, saving a model
`kge eval` reads, and one clear error for a partition that does not fit the machines."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
from distgraph.cluster.hosts import free_ports
from leaks import new_session
from test_kge_buckets import planted
from test_kge_train import planted_pairs

COMMON = ["--model_name", "TransE_l2", "--hidden_dim", "32", "--gamma", "4.0", "--lr", "0.3", "--batch_size", "128",
          "--neg_sample_size", "32", "-adv", "--batch_size_eval", "64", "--log_interval", "100"]


def _cli(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {"OMP_NUM_THREADS": "1", "DISTGRAPH_SESSION": new_session(), "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-m", "distgraph.cli.main", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env=env)


@pytest.fixture
def kg(tmp_path):
    files = planted_pairs(tmp_path, n=400, held_out=60)
    return tmp_path, ["--dataset", "planted", "--data_path", str(tmp_path), "--format", "raw_udd_hrt",
                      "--data_files", *files]


def _partition(root, data, k, method):
    done = _cli("kge", "partition", *data, "-k", str(k), "--part_method", method, cwd=root)
    assert done.returncode == 0, done.stderr
    return float(re.search(r"different partitions: ([\d.]+)%", done.stdout).group(1))


def test_metis_keeps_more_triples_on_one_machine_than_random(kg):
    root, data = kg
    random_share = _partition(root, data, 2, "random")
    metis_share = _partition(root, data, 2, "metis")
    assert random_share > 30 and metis_share < random_share / 2, (metis_share, random_share)
    config = root / "planted" / "partitions" / "planted.json"
    assert config.is_file() and (root / "planted" / "partitions" / "kg" / "test.npy").is_file()


def test_a_streamed_partition_holds_every_known_triple_once_a_side(kg):
    """--part_method kaminpar streams from the memory-mapped triples, as a KG too big for METIS in
    memory does: each part's known triples (by head, by tail) together are every triple once a side."""
    import numpy as np

    from distgraph.kge.data.formats import load_dataset
    from distgraph.partition import load_partition_book
    from distgraph.partition.layout import PartitionConfig

    root, data = kg
    random_share = _partition(root, data, 2, "random")
    streamed_share = _partition(root, data, 2, "kaminpar")
    assert streamed_share < random_share, (streamed_share, random_share)
    cfg = PartitionConfig.load(root / "planted" / "partitions" / "planted.json")
    book = load_partition_book(cfg.path)
    kg_data = load_dataset(root, "planted", "raw_udd_hrt", data[data.index("--data_files") + 1:])
    total = len(kg_data.train) + len(kg_data.valid) + len(kg_data.test)
    for side, col in (("head", 0), ("tail", 2)):
        rows = [np.load(cfg.dir / cfg.part(p).file(f"kge_known_{side}")) for p in range(2)]
        assert sum(len(r) for r in rows) == total
        for p, r in enumerate(rows):
            assert (book.nid2partid(r[:, col].astype(np.int64)).numpy() == p).all()


@pytest.mark.multiprocess
def test_dist_train_on_two_machines_reaches_the_single_machine_mrr(kg):
    root, data = kg
    _partition(root, data, 2, "metis")
    (root / "ip_config.txt").write_text("".join(f"127.0.0.1 {p} 1\n" for p in free_ports("127.0.0.1", 2)))
    dist = _cli("kge", "dist-train", *data, *COMMON, "--path", str(root), "--ip_config", str(root / "ip_config.txt"),
                "--num_client_proc", "1", "--max_step", "300", "--test", "--save_path", "dist", cwd=root)
    assert dist.returncode == 0, dist.stdout[-3000:] + dist.stderr[-3000:]
    single = _cli("kge", "train", *data, *COMMON, "--num_proc", "2", "--max_step", "300", "--test",
                  "--save_path", str(root / "single"), cwd=root)
    assert single.returncode == 0, single.stderr[-3000:]

    def mrr(out: str) -> float:
        return float(re.search(r"Test average MRR : ([\d.]+)", out).group(1))

    assert "[0][Train](300/300)" in dist.stdout and "[1][Train](300/300)" in dist.stdout
    assert mrr(dist.stdout) > 0.9 and abs(mrr(dist.stdout) - mrr(single.stdout)) < 0.05
    saved = next((root / "dist").glob("TransE_l2_planted_*"))
    again = _cli("kge", "eval", "--model_path", str(saved), "--batch_size_eval", "64", cwd=root)
    assert again.returncode == 0, again.stderr
    assert abs(mrr(again.stdout) - mrr(dist.stdout)) < 1e-3  # the saved embeddings are the trained ones


def test_a_partition_that_does_not_fit_the_machines_is_one_clear_error(kg):
    root, data = kg
    (root / "ip.txt").write_text("".join(f"127.0.0.1 {p}\n" for p in free_ports("127.0.0.1", 3)))
    missing = _cli("kge", "dist-train", *data, *COMMON, "--path", str(root), "--ip_config", str(root / "ip.txt"),
                   cwd=root)
    assert missing.returncode == 2
    assert "partition config" in missing.stderr and "planted/partitions/planted.json does not exist" in \
        missing.stderr and "Traceback" not in missing.stderr
    _partition(root, data, 2, "random")
    wrong = _cli("kge", "dist-train", *data, *COMMON, "--path", str(root), "--ip_config", str(root / "ip.txt"),
                 cwd=root)
    assert wrong.returncode == 2 and "lists 3 machines but" in wrong.stderr and "has 2 partitions" in wrong.stderr


def test_a_streamed_partition_reads_mapped_triples_without_mapping_them(kg, tmp_path):
    """Triples in the loader's mapped file are partitioned through positioned reads
    (`FileColumn`): the files written are byte for byte those of the same triples in memory."""
    import dataclasses

    import numpy as np

    from distgraph.data.file_array import FileColumn
    from distgraph.kge.data.formats import load_dataset
    from distgraph.kge.data.partition import partition_kg, triple_columns

    root, data = kg
    kg_data = load_dataset(root, "planted", "raw_udd_hrt", data[data.index("--data_files") + 1:])
    np.save(tmp_path / "train.npy", kg_data.train)
    mapped = dataclasses.replace(kg_data, train=np.load(tmp_path / "train.npy", mmap_mode="r"))
    heads, rels, tails = triple_columns(mapped.train)
    assert isinstance(rels, FileColumn)
    assert (heads[3:9] == kg_data.train[3:9, 0]).all() and (tails[:] == kg_data.train[:, 2]).all()
    picked = np.array([7, 2, 2, 500])
    assert (rels[picked] == kg_data.train[picked, 1]).all() and (np.asarray(rels) == kg_data.train[:, 1]).all()
    outs = []
    for i, d in enumerate((kg_data, mapped)):
        out = tmp_path / f"out{i}"
        partition_kg(d, 2, out, part_method="kaminpar", seed=3)
        outs.append(out)
    files = sorted(p.relative_to(outs[0]) for p in outs[0].rglob("*") if p.is_file())
    assert len(files) > 10 and files == sorted(p.relative_to(outs[1]) for p in outs[1].rglob("*") if p.is_file())
    for f in files:
        if f.suffix == ".json":
            continue  # it records the seconds taken
        assert (outs[0] / f).read_bytes() == (outs[1] / f).read_bytes(), f


def _planted_on_two_machines(tmp_path: Path) -> tuple[Path, list[str]]:
    """The `planted` KG partitioned for 2 loopback machines, and the `kge dist-train` command
    line that trains it (TransE, the bucket tests' settings)."""
    root = planted(tmp_path)
    data = ["--dataset", "planted", "--data_path", str(root), "--format", "udd_hrt", "--data_files",
            "entities.dict", "relations.dict", "train.txt", "valid.txt", "test.txt"]
    done = _cli("kge", "partition", *data, "-k", "2", "--part_method", "random", cwd=root)
    assert done.returncode == 0, done.stderr
    (root / "ip_config.txt").write_text("".join(f"127.0.0.1 {p} 1\n" for p in free_ports("127.0.0.1", 2)))
    return root, ["kge", "dist-train", *data, "--model_name", "TransE_l2", "--hidden_dim", "16", "--gamma", "6",
                  "--lr", "0.25", "--batch_size", "256", "--neg_sample_size", "32", "--batch_size_eval", "64",
                  "--log_interval", "10000", "--path", str(root), "--ip_config", str(root / "ip_config.txt"),
                  "--num_client_proc", "1", "--test", "--seed", "3"]


def _mrr(out: str) -> float:
    return float(re.search(r"Test average MRR : ([\d.]+)", out).group(1))


@pytest.mark.multiprocess
def test_dist_train_with_each_machines_entities_on_its_disk_learns_and_saves(tmp_path):
    """--num_entity_partitions across machines: each machine's entities in 2 partitions on its
    disk, trained in stages of buckets; it learns the planted structure as the in-memory job
    does, ranks through the servers' slots, saves every row in the original ids, and leaves no
    partition files behind."""
    root, run = _planted_on_two_machines(tmp_path)
    disk = _cli(*run, "--max_step", "600", "--num_entity_partitions", "2", "--save_path", "disk", cwd=root)
    assert disk.returncode == 0, disk.stdout[-3000:] + disk.stderr[-3000:]
    memory = _cli(*run, "--max_step", "600", "--no_save_emb", cwd=root)
    assert memory.returncode == 0, memory.stdout[-3000:] + memory.stderr[-3000:]
    untrained = _cli(*run, "--max_step", "1", "--num_entity_partitions", "2", "--no_save_emb", cwd=root)
    assert untrained.returncode == 0, untrained.stdout[-3000:] + untrained.stderr[-3000:]
    mrr = _mrr

    print(f"MRR: on disk {mrr(disk.stdout)}, in memory {mrr(memory.stdout)}, untrained {mrr(untrained.stdout)}")
    assert "each machine's share of the entity table (up to" in disk.stdout and "on disk in 2 partitions" in disk.stdout
    assert "[0][Train](600/600)" in disk.stdout and "[1][Train](600/600)" in disk.stdout
    assert mrr(disk.stdout) > 10 * mrr(untrained.stdout) and mrr(disk.stdout) > 0.25, (disk.stdout[-2000:],
                                                                                     untrained.stdout[-800:])
    assert abs(mrr(disk.stdout) - mrr(memory.stdout)) < 0.05, (disk.stdout[-2000:], memory.stdout[-800:])
    assert not list((root / "disk").glob(".kge-partitions-*")) and not list((root / "disk").glob(".entity-rows-*"))
    saved = next((root / "disk").glob("TransE_l2_planted_*"))
    again = _cli("kge", "eval", "--model_path", str(saved), "--batch_size_eval", "64", cwd=root)
    assert again.returncode == 0, again.stderr
    assert abs(mrr(again.stdout) - mrr(disk.stdout)) < 1e-3  # every row saved, in the original ids


@pytest.mark.multiprocess
def test_dist_train_on_disk_resumes_from_a_checkpoint_at_a_stage_boundary(tmp_path):
    """Checkpoints at stage boundaries: each machine's partition files linked in, the relation
    tables and every trainer's samplers; a run stopped at 200 steps and resumed to 400 ranks as
    the run of 400 steps without a stop does, and the newest two checkpoints are kept."""
    root, run = _planted_on_two_machines(tmp_path)
    run = [*run, "--num_entity_partitions", "2", "--no_save_emb", "--checkpoint_interval", "60"]
    whole = _cli(*run, "--max_step", "400", "--checkpoint_dir", "whole", cwd=root)
    assert whole.returncode == 0, whole.stdout[-3000:] + whole.stderr[-3000:]
    first = _cli(*run, "--max_step", "200", "--checkpoint_dir", "ck", cwd=root)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    kept = sorted((root / "ck").glob("step-*"))
    assert len(kept) == 2 and all((k / f"entities-{m}").is_dir() for k in kept for m in (0, 1)), kept
    rest = _cli(*run, "--max_step", "400", "--checkpoint_dir", "ck", "--resume", cwd=root)
    assert rest.returncode == 0, rest.stdout[-3000:] + rest.stderr[-3000:]
    assert f"Resume from {kept[-1]}" in rest.stdout and "[1][Train](400/400)" in rest.stdout, rest.stdout[-2000:]
    print(f"MRR: resumed {_mrr(rest.stdout)}, without a stop {_mrr(whole.stdout)}")
    assert _mrr(rest.stdout) > 0.25 and abs(_mrr(rest.stdout) - _mrr(whole.stdout)) < 0.05
    other = _cli(*[x if x != "2" else "3" for x in run], "--max_step", "400", "--checkpoint_dir", "ck", "--resume",
                 cwd=root)
    assert other.returncode != 0 and "other entity partitions" in other.stdout + other.stderr, other.stderr[-2000:]


def test_dist_train_with_entities_on_disk_refuses_what_it_cannot_do(kg):
    root, data = kg
    (root / "ip.txt").write_text("".join(f"127.0.0.1 {p}\n" for p in free_ports("127.0.0.1", 2)))
    base = ["kge", "dist-train", *data, *COMMON, "--path", str(root), "--ip_config", str(root / "ip.txt"),
            "--num_entity_partitions", "2"]
    for flags, says in ((["--async_update"], "drop --async_update"), (["--rel_part"], "drop --rel_part")):
        done = _cli(*base, *flags, cwd=root)
        assert done.returncode == 2 and says in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_a_memory_budget_that_holds_each_share_refuses_nothing_on_disk(kg):
    """--memory_budget decides with the partition what the trainers will: a budget that holds each
    machine's share keeps it in memory, so the flags that disk training refuses are not refused;
    a budget too small for a share (or --num_entity_partitions) puts it on disk."""
    from dataclasses import replace

    from distgraph.kge import TrainConfig
    from distgraph.kge.pipeline import _shares_on_disk

    root, data = kg
    _partition(root, data, 2, "metis")
    config = root / "planted" / "partitions" / "planted.json"
    cfg = TrainConfig(model_name="TransE_l2", dataset="planted", hidden_dim=32)
    assert not _shares_on_disk(cfg, config)
    assert not _shares_on_disk(replace(cfg, memory_budget=64.0), config)
    assert _shares_on_disk(replace(cfg, memory_budget=64.0), root / "elsewhere.json")  # no config here: as asked
    assert _shares_on_disk(replace(cfg, num_entity_partitions=2), config)
    assert _shares_on_disk(replace(cfg, hidden_dim=2000, memory_budget=0.0005), config)
