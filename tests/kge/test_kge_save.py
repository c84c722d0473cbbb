"""`save_model` writes a table a bounded block at a time (a bucket-trained entity table a
partition at a time): the files equal those of the whole table saved at once, and a save that
fails part-way or would not fit leaves nothing in the save path."""

import errno
import io
from types import SimpleNamespace

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch

import distgraph.files
from distgraph.errors import InputError
from distgraph.kge import TrainConfig
from distgraph.kge import saved_model
from distgraph.kge.data.names import Names
from distgraph.kge.saved_model import RowBlocks, load_model, save_model, table_file

E, R, D = 101, 5, 6


def _setup():
    cfg = TrainConfig(model_name="TransR", dataset="kg", hidden_dim=D)
    gen = np.random.default_rng(3)
    tables = {"entity": gen.standard_normal((E, D), dtype=np.float32),
              "relation": gen.standard_normal((R, D), dtype=np.float32),
              "projection": gen.standard_normal((R, D * D), dtype=np.float32)}
    return cfg, tables, Names.of([f"ent{i}" for i in range(E)]), Names.of([f"rel{i}" for i in range(R)])


def _uneven(rows: np.ndarray) -> RowBlocks:
    cuts = [0, 7, 7, 20, 64, len(rows)]  # an empty block, blocks smaller and larger than a write
    return RowBlocks(rows.shape, rows.dtype, lambda: (rows[a:b] for a, b in zip(cuts, cuts[1:])))


def test_a_table_in_blocks_saves_the_files_of_the_whole_table(tmp_path, monkeypatch):
    cfg, tables, ents, rels = _setup()
    save_model(tmp_path / "whole", cfg, tables, ents, rels)
    monkeypatch.setattr(saved_model, "_WRITE_BYTES", 9 * D * 4)  # 9 rows a write: pieces cross the blocks
    save_model(tmp_path / "blocks", cfg, {**tables, "entity": _uneven(tables["entity"])}, ents, rels)
    for name, rows in tables.items():
        expected = io.BytesIO()
        np.save(expected, rows)
        assert table_file(tmp_path / "blocks", cfg, name).read_bytes() == expected.getvalue()
        assert table_file(tmp_path / "whole", cfg, name).read_bytes() == expected.getvalue()
    ent = pq.read_table(tmp_path / "blocks" / "entities.parquet")
    assert ent.column("id").to_pylist() == list(range(E))
    assert ent.column("name").to_pylist() == [f"ent{i}" for i in range(E)]
    assert np.array_equal(np.stack(ent.column("emb").to_numpy(zero_copy_only=False)), tables["entity"])
    rel = pq.read_table(tmp_path / "blocks" / "relations.parquet")
    assert rel.column("name").to_pylist() == [f"rel{i}" for i in range(R)]
    assert np.array_equal(np.stack(rel.column("projection").to_numpy(zero_copy_only=False)), tables["projection"])
    assert pq.read_table(tmp_path / "whole" / "entities.parquet").equals(ent)
    loaded = load_model(tmp_path / "blocks")
    assert np.array_equal(np.asarray(loaded.tables["entity"]), tables["entity"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blocks", "whole"]


def test_a_save_that_fails_part_way_leaves_nothing(tmp_path):
    cfg, tables, ents, rels = _setup()

    def blocks():
        yield tables["entity"][:50]
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        save_model(tmp_path / "model", cfg, {**tables, "entity": RowBlocks((E, D), np.dtype(np.float32), blocks)},
                   ents, rels)
    assert list(tmp_path.iterdir()) == []


def test_a_model_that_will_not_fit_is_refused_before_writing(tmp_path, monkeypatch):
    cfg, tables, ents, rels = _setup()
    monkeypatch.setattr(distgraph.files, "free_bytes", lambda path: 1000)
    with pytest.raises(InputError, match=r"the model .*model .*needs about .* GiB of disk"):
        save_model(tmp_path / "model", cfg, tables, ents, rels)
    assert list(tmp_path.iterdir()) == []


class _Pulls:
    """A table that records how many rows each read asks for (as a DistTensor pulls them)."""

    def __init__(self, rows: torch.Tensor):
        self.rows, self.shape, self.sizes = rows, rows.shape, []

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, ids: torch.Tensor) -> torch.Tensor:
        self.sizes.append(len(ids))
        return self.rows[ids]


def test_trainer_0_saves_a_partitioned_run_a_block_of_rows_at_a_time(tmp_path, monkeypatch):
    """Trainer 0 reads the tables of a 3-machine run a few rows at a time, the entities in their
    original ids: the files are those of the whole tables pulled and reordered at once."""
    from test_kge_train import planted_pairs

    from distgraph.kge.data.formats import load_dataset, read_dict
    from distgraph.kge.data.partition import partition_kg
    from distgraph.kge.train import tables as kge_tables, worker
    from distgraph.partition.layout import PartitionConfig

    data = load_dataset(tmp_path, "planted", "raw_udd_hrt", planted_pairs(tmp_path, n=40, held_out=5))
    partition_kg(data, 3, tmp_path / "parts", part_method="random", seed=1)
    pcfg = PartitionConfig.load(tmp_path / "parts" / "planted.json")
    _, kg_files = pcfg.attachment("kge")
    orig = torch.from_numpy(np.load(pcfg.dir / pcfg.mapping_file("node", "_N"))).to(torch.int64)
    assert not torch.equal(orig, torch.arange(len(orig)))  # the run's ids are not the original ones
    cfg, _, _, _ = _setup()
    gen = torch.Generator().manual_seed(0)
    trained = {"entity": torch.randn(data.n_entities, D, generator=gen),
               "relation": torch.randn(data.n_relations, D, generator=gen),
               "projection": torch.randn(data.n_relations, D * D, generator=gen)}
    trainer = worker.Trainer.__new__(worker.Trainer)  # trainer 0 of the run, its tables as it holds them
    trainer.ctx, trainer.cfg, trainer.pcfg, trainer.kg_files = SimpleNamespace(rank=0), cfg, pcfg, kg_files
    trainer.save_dir, trainer.emit = str(tmp_path / "blocks"), lambda event: None
    trainer.tables = SimpleNamespace(tables={name: _Pulls(rows) for name, rows in trained.items()})
    monkeypatch.setattr(kge_tables, "BLOCK_BYTES", 7 * D * 4)  # 7 entity rows a read
    trainer._save()

    whole = {name: rows[torch.arange(len(rows))] for name, rows in trained.items()}  # what trainer 0 saved before
    whole["entity"] = torch.empty_like(whole["entity"]).index_copy_(0, orig, whole["entity"])
    save_model(tmp_path / "whole", cfg, whole, read_dict(pcfg.dir / kg_files["entities"]),
               read_dict(pcfg.dir / kg_files["relations"]))
    names = sorted(p.name for p in (tmp_path / "whole").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "blocks").iterdir()) and len(names) == 8
    for name in names:
        assert (tmp_path / "blocks" / name).read_bytes() == (tmp_path / "whole" / name).read_bytes(), name
    pulls = trainer.tables.tables
    assert max(pulls["entity"].sizes) == 7 and sum(pulls["entity"].sizes) == data.n_entities
    assert max(pulls["projection"].sizes) == 1  # a projection row is D times wider
