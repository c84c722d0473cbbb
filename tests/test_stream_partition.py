"""The streaming partitioner writes what `partition_graph` writes, byte for byte, for the same
assignment, from every input it reads (an in-memory graph, an `.npz` read in pieces, DGL's
chunked format), homogeneous and heterogeneous, over many buckets and with KaMinPar's
assignment; chunked inputs are checked, and a failed run leaves nothing that loads."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from partition_files import chunked_copy, same_partitions

from distgraph.data import generate_mag, generate_sbm, save_npz
from distgraph.data.chunked import ChunkedGraph, load_chunked
from distgraph.errors import InputError, PartitionError
from distgraph.partition import load_partition, partition_graph
from distgraph.partition.stream import from_array_graph, from_chunked, from_npz, partition_stream


@pytest.fixture(scope="module", params=["homogeneous", "heterogeneous"])
def graph(request):
    if request.param == "homogeneous":
        return generate_sbm(3000, 30000, num_classes=6, feat_dim=8, seed=1)
    return generate_mag(1200, 900, 40, 80, num_classes=5, feat_dim=8, seed=2)


@pytest.mark.parametrize("reader", ["graph", "npz", "chunked"])
def test_every_input_partitions_as_partition_graph_does(graph, tmp_path, reader):
    partition_graph(graph, "g", 3, tmp_path / "memory", part_method="random", seed=4)
    if reader == "graph":
        source = from_array_graph(graph)
    elif reader == "npz":
        save_npz(graph, tmp_path / "g.npz")
        source = from_npz(tmp_path / "g.npz")
    else:
        source = from_chunked(chunked_copy(graph, tmp_path / "chunked"))
    # small buckets: every part is written over many of them
    stats = partition_stream(source, "g", 3, tmp_path / "stream", part_method="random", seed=4, bucket_edges=2000)
    same_partitions(tmp_path / "memory", tmp_path / "stream")
    assert sum(stats.part_edges) == graph.num_edges() and 0 < stats.edge_cut < 1
    assert not list((tmp_path / "stream").glob(".*")), "scratch left behind"
    part = load_partition(tmp_path / "stream" / "g.json", 1)
    assert part.num_inner_nodes == stats.part_nodes[1]


def test_split_masks_read_alike_from_a_graph_and_in_pieces_from_a_file(tmp_path, monkeypatch):
    """One `node_mask` serves both paths: a graph's tensors, and an `.npz`'s members a few rows
    at a time; a mask of another length is the same error on either."""
    from distgraph.partition import parts

    g = generate_mag(300, 200, 20, 40, seed=3)
    save_npz(g, tmp_path / "g.npz")
    source = from_npz(tmp_path / "g.npz")
    monkeypatch.setattr(parts, "MASK_ROWS", 7)
    for name in parts.SPLIT_MASKS:
        in_memory = parts.node_mask(g.ntypes, g.ntype_offsets, {t: g.nodes[t].data for t in g.ntypes}, name)
        assert 0 < in_memory.sum() < g.num_nodes("paper")
        assert np.array_equal(parts.node_mask(source.ntypes, source.ntype_offsets, source.node_data, name), in_memory)
    source.node_data["paper"]["train_mask"] = np.zeros((g.num_nodes("paper"), 2), dtype=bool)
    with pytest.raises(PartitionError, match="'train_mask' of type 'paper' has shape .*one value per 'paper' node"):
        parts.node_mask(source.ntypes, source.ntype_offsets, source.node_data, "train_mask")


def _assignment(config: Path) -> np.ndarray:
    """The part of every original node id, read back from a partitioning's id maps."""
    cfg = json.loads(config.read_text())
    parts = np.empty(cfg["num_nodes"], dtype=np.int64)
    base = 0
    for t in cfg["ntypes"]:
        new2old = np.load(config.parent / cfg["mapping"]["node"][t])
        ranges = np.asarray(cfg["node_map"][t])
        at = 0
        for p, (lo, hi) in enumerate(ranges):
            parts[base + new2old[at:at + hi - lo]] = p
            at += hi - lo
        base += new2old.size
    return parts


def test_kaminpar_partitions_stream_as_partition_graph_writes_them(graph, tmp_path, monkeypatch):
    """KaMinPar's assignment (its result may vary between runs: it depends on memory layout),
    written by both paths, gives the same files; its cut is near METIS's."""
    stats = partition_stream(from_array_graph(graph), "g", 3, tmp_path / "stream", part_method="kaminpar", seed=2,
                             bucket_edges=5000)
    parts = _assignment(tmp_path / "stream" / "g.json")
    import distgraph.partition.writer as writer

    monkeypatch.setattr(writer, "assign_parts", lambda *a, alongside, **k: (alongside(), parts.copy())[1])
    partition_graph(graph, "g", 3, tmp_path / "memory", part_method="kaminpar")
    monkeypatch.undo()
    same_partitions(tmp_path / "memory", tmp_path / "stream")
    metis = partition_graph(graph, "g", 3, tmp_path / "metis", part_method="metis")
    assert stats.edge_cut <= 1.15 * metis.edge_cut
    assert max(stats.part_nodes) <= 1.04 * graph.num_nodes() / 3


def test_chunked_format_round_trip_and_other_chunk_formats(tmp_path):
    g = generate_sbm(500, 3000, num_classes=3, feat_dim=4, seed=3)
    loaded = load_chunked(chunked_copy(g, tmp_path / "c"))
    assert np.array_equal(loaded.src, g.src) and np.array_equal(loaded.dst, g.dst)
    for k, v in g.ndata.items():
        assert np.array_equal(np.asarray(loaded.ndata[k]), np.asarray(v))
    # the same edges as CSV and parquet chunks (DGL's other edge formats)
    import pyarrow as pa
    import pyarrow.parquet as pq

    meta = json.loads((tmp_path / "c" / "metadata.json").read_text())
    src, dst = np.asarray(g.src), np.asarray(g.dst)
    np.savetxt(tmp_path / "c" / "e.csv", np.stack([src[:1000], dst[:1000]], 1), fmt="%d", delimiter=" ")
    pq.write_table(pa.table({"src": src[1000:], "dst": dst[1000:]}), tmp_path / "c" / "e.parquet")
    meta["edges"]["_N:_E:_N"] = {"format": {"name": "csv", "delimiter": " "}, "data": ["e.csv"]}
    meta["num_edges_per_chunk"] = [[1000]]
    (tmp_path / "c" / "metadata.json").write_text(json.dumps(meta))
    part = ChunkedGraph(tmp_path / "c")
    (s, d), = list(part.edge_chunks(("_N", "_E", "_N")))
    assert np.array_equal(s, src[:1000]) and np.array_equal(d, dst[:1000])
    meta["edges"]["_N:_E:_N"] = {"format": {"name": "parquet"}, "data": ["e.parquet"]}
    meta["num_edges_per_chunk"] = [[2000]]
    (tmp_path / "c" / "metadata.json").write_text(json.dumps(meta))
    (s, d), = list(ChunkedGraph(tmp_path / "c").edge_chunks(("_N", "_E", "_N")))
    assert np.array_equal(s, src[1000:]) and np.array_equal(d, dst[1000:])


@pytest.mark.parametrize("damage, message", [
    ("missing chunk", r"names .*-1\.npy, which is missing; restore it"),
    ("wrong row count", "has 1000 rows but metadata.json says 999"),
    ("id out of range", "node ids outside"),
    ("not json", "is not valid JSON"),
])
def test_a_damaged_chunked_graph_is_one_clear_error(tmp_path, damage, message):
    g = generate_sbm(500, 3000, num_classes=3, feat_dim=4, seed=3)
    meta_file = chunked_copy(g, tmp_path / "c")
    meta = json.loads(meta_file.read_text())
    first = tmp_path / "c" / meta["edges"]["_N:_E:_N"]["data"][1]
    if damage == "missing chunk":
        first.unlink()
    elif damage == "wrong row count":
        meta["num_edges_per_chunk"][0][0] = 999
        meta_file.write_text(json.dumps(meta))
    elif damage == "id out of range":
        pairs = np.load(first)
        pairs[5, 0] = 10_000
        np.save(first, pairs)
    else:
        meta_file.write_text("{not json")
    with pytest.raises(InputError, match=message):
        source = from_chunked(tmp_path / "c")
        partition_stream(source, "g", 2, tmp_path / "out", part_method="random")
    assert not (tmp_path / "out" / "g.json").exists()


def test_a_run_that_fails_while_writing_leaves_nothing_that_loads(graph, tmp_path, monkeypatch):
    """A full disk while writing (os.pwrite failing with ENOSPC): one clear error, the earlier
    partitioning of the folder is gone as a whole, no file of the failed one is left."""
    partition_graph(graph, "g", 3, tmp_path / "out", part_method="random", seed=1)
    assert load_partition(tmp_path / "out" / "g.json", 0)
    calls = {"n": 0}
    real = os.pwrite

    def full_disk(fd, data, offset):
        calls["n"] += 1
        if calls["n"] > 12:
            raise OSError(28, "No space left on device")
        return real(fd, data, offset)

    monkeypatch.setattr(os, "pwrite", full_disk)
    with pytest.raises(InputError, match="No space left on device.*free disk space"):
        partition_stream(from_array_graph(graph), "g", 3, tmp_path / "out", part_method="random", seed=2)
    monkeypatch.undo()
    assert not (tmp_path / "out" / "g.json").exists()
    assert not [p for p in (tmp_path / "out").rglob("*") if p.is_file()], "files of the failed run are left"
    with pytest.raises(PartitionError, match="does not exist"):
        load_partition(tmp_path / "out" / "g.json", 0)


@pytest.mark.parametrize("compressed", [False, True], ids=["stored", "compressed"])
def test_ogb_binary_layout_partitions_as_the_graph_it_holds(tmp_path, compressed):
    """A tiny folder in ogbn-papers100M's binary layout (raw/data.npz, raw/node-label.npz,
    split/time/*.csv.gz), stored or compressed as OGB ships it, partitions as the same graph
    built in memory; NaN labels become -1, the splits masks."""
    import gzip

    from distgraph.data.ogb_binary import UNPACKED
    from distgraph.tensor_graph import Graph
    from distgraph.partition.stream import from_ogb_binary

    g = generate_sbm(800, 6000, num_classes=4, feat_dim=6, seed=7)
    src, dst = np.asarray(g.src), np.asarray(g.dst)
    feat = np.asarray(g.ndata["feat"]).astype(np.float16)
    label = np.asarray(g.ndata["label"]).astype(np.float64)
    label[::7] = np.nan
    (tmp_path / "papers" / "raw").mkdir(parents=True)
    save = np.savez_compressed if compressed else np.savez
    save(tmp_path / "papers" / "raw" / "data.npz", edge_index=np.stack([src, dst]), num_nodes_list=np.array([800]),
         num_edges_list=np.array([6000]), node_feat=feat, node_year=np.arange(800) % 30 + 1990)
    np.savez_compressed(tmp_path / "papers" / "raw" / "node-label.npz", node_label=label[:, None])
    split = tmp_path / "papers" / "split" / "time"
    split.mkdir(parents=True)
    ids = np.random.default_rng(0).permutation(800)
    for name, part in (("train", ids[:80]), ("valid", ids[80:100]), ("test", ids[100:130])):
        with gzip.open(split / f"{name}.csv.gz", "wt") as f:
            f.write("".join(f"{i}\n" for i in part))
    want = np.where(np.isnan(label), -1, label).astype(np.int64)
    masks = {}
    for key, part in (("train_mask", ids[:80]), ("val_mask", ids[80:100]), ("test_mask", ids[100:130])):
        masks[key] = np.zeros(800, dtype=bool)
        masks[key][part] = True
    ref = Graph(src, dst, 800, {"feat": feat, "label": want, "year": np.arange(800) % 30 + 1990, **masks})
    partition_graph(ref, "g", 2, tmp_path / "memory", part_method="random", seed=3)
    source = from_ogb_binary(tmp_path / "papers")
    partition_stream(source, "g", 2, tmp_path / "stream", part_method="random", seed=3, bucket_edges=1500)
    same_partitions(tmp_path / "memory", tmp_path / "stream")
    assert (tmp_path / "papers" / UNPACKED).is_dir() == compressed  # compressed members inflated once, beside



def test_string_ids_of_an_edge_list_are_kept_as_partition_graph_keeps_them(tmp_path):
    from distgraph.data import load_edgelist

    rng = np.random.default_rng(0)
    names = np.array([f"user-{i:04d}" for i in range(300)])
    lines = [f"{names[a]}\t{names[b]}" for a, b in rng.integers(0, 300, (2000, 2))]
    (tmp_path / "edges.tsv").write_text("\n".join(lines) + "\n")
    g = load_edgelist(tmp_path / "edges.tsv", tensors=False)
    assert g.node_names is not None
    save_npz(g, tmp_path / "g.npz")
    partition_graph(g, "g", 2, tmp_path / "memory", part_method="random", seed=1)
    partition_stream(from_npz(tmp_path / "g.npz"), "g", 2, tmp_path / "stream", part_method="random", seed=1)
    same_partitions(tmp_path / "memory", tmp_path / "stream")
    assert (tmp_path / "stream" / "mapping" / "node_names.npy").is_file()


def test_halo_bits_rank_and_list_the_halo_as_a_sorted_array_would(monkeypatch):
    from distgraph.partition.stream import halo as halo_mod

    monkeypatch.setattr(halo_mod, "WORDS_PER_PIECE", 3)  # the listing and the local ids cross pieces
    monkeypatch.setattr(halo_mod, "IDS_PER_PIECE", 7)
    n = 64 * 10 + 5  # the last word only part full
    rng = np.random.default_rng(0)
    h = halo_mod.Halo(n)
    for _ in range(2):  # a second part reuses the bits after clear
        ids = rng.integers(0, n, 300, dtype=np.int64)
        ids = np.concatenate([ids, [0, 63, 64, n - 1]]).astype(np.int32)
        for piece in np.array_split(ids, 4):
            h.add(piece)
        want = np.unique(ids)
        assert h.count() == want.size
        assert np.array_equal(np.concatenate(list(h.ids())), want)
        assert np.array_equal(h.rank(ids.astype(np.int64)), np.searchsorted(want, ids))
        lo, hi = 100, 200  # a part of inner nodes [100, 200), its halo ids outside them
        h.clear()
        outside = ids[(ids < lo) | (ids >= hi)]
        h.add(outside)
        h.count()
        ends = np.concatenate([ids, np.arange(lo, hi, dtype=np.int32)])
        want = np.unique(outside)
        local = np.where((ends >= lo) & (ends < hi), ends - lo, hi - lo + np.searchsorted(want, ends))
        assert np.array_equal(h.local_ids(ends, lo, hi), local)
        h.clear()
    assert h.count() == 0 and np.concatenate(list(h.ids())).size == 0
