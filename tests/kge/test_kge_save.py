"""`save_model` writes a table a bounded block at a time (a bucket-trained entity table a
partition at a time): the files equal those of the whole table saved at once, and a save that
fails part-way or would not fit leaves nothing in the save path."""

import errno
import io

import numpy as np
import pyarrow.parquet as pq
import pytest

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
