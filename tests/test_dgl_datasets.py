"""Datasets under DGL's and OGB's names, read from files written here in their layouts (nothing
is downloaded): `RedditDataset` from DGL's `reddit_data.npz` and SciPy-format graph file, and
`DglNodePropPredDataset` over OGB's CSV folders; a missing copy is one clear error naming the
files it needs."""

from pathlib import Path

import numpy as np
import pytest
import torch

from distgraph.data import DglNodePropPredDataset, RedditDataset
from distgraph.errors import InputError
from test_ogb import tiny_mag, write_csv


def write_reddit(folder: Path, n: int = 40, self_loop: bool = False, fmt: str = "coo") -> dict:
    """DGL's Reddit files: features, labels and node types 1/2/3, and the adjacency matrix as
    `scipy.sparse.save_npz` lays it out (format as bytes, shape, and the format's arrays)."""
    rng = np.random.default_rng(1)
    folder.mkdir(parents=True, exist_ok=True)
    row, col = rng.integers(0, n, 5 * n), rng.integers(0, n, 5 * n)
    truth = {"row": row, "col": col, "feature": rng.normal(size=(n, 6)), "label": rng.integers(0, 4, n),
             "node_types": rng.integers(1, 4, n)}
    np.savez(folder / "reddit_data.npz", feature=truth["feature"], label=truth["label"], node_types=truth["node_types"])
    name = "reddit_self_loop_graph.npz" if self_loop else "reddit_graph.npz"
    data = np.ones(row.size, dtype=np.float32)
    if fmt == "coo":
        np.savez(folder / name, format=np.array(b"coo"), shape=np.array([n, n]), row=row.astype(np.int32),
                 col=col.astype(np.int32), data=data)
    else:  # CSR: rows sorted
        order = np.lexsort((col, row))
        truth["row"], truth["col"] = row[order], col[order]
        indptr = np.concatenate([[0], np.cumsum(np.bincount(row, minlength=n))])
        np.savez(folder / name, format=np.array(b"csr"), shape=np.array([n, n]), indptr=indptr.astype(np.int32),
                 indices=col[order].astype(np.int32), data=data)
    return truth


@pytest.mark.parametrize("fmt", ["coo", "csr"])
def test_reddit_reads_dgl_files_from_its_folder(tmp_path, fmt):
    truth = write_reddit(tmp_path / "reddit", fmt=fmt)
    data = RedditDataset(raw_dir=tmp_path)
    g = data[0]
    assert len(data) == 1 and g.num_nodes() == 40 and data.num_classes == int(truth["label"].max()) + 1
    assert torch.equal(g.src, torch.from_numpy(truth["row"])) and torch.equal(g.dst, torch.from_numpy(truth["col"]))
    assert g.ndata["feat"].dtype == torch.float32 and torch.allclose(g.ndata["feat"].double(),
                                                                      torch.from_numpy(truth["feature"]), atol=1e-6)
    assert torch.equal(g.ndata["label"], torch.from_numpy(truth["label"]))
    for key, kind in (("train_mask", 1), ("val_mask", 2), ("test_mask", 3)):
        assert torch.equal(g.ndata[key], torch.from_numpy(truth["node_types"] == kind))
    assert RedditDataset(raw_dir=tmp_path / "reddit")[0].num_edges() == g.num_edges()  # the folder itself
    assert RedditDataset(raw_dir=tmp_path, transform=lambda x: x.reverse())[0].src.tolist() == g.dst.tolist()


def test_reddit_self_loop_file_and_a_clear_error_when_absent(tmp_path):
    write_reddit(tmp_path / "reddit_self_loop", self_loop=True)
    assert RedditDataset(self_loop=True, raw_dir=tmp_path)[0].num_nodes() == 40
    with pytest.raises(InputError, match=r"reddit_data\.npz and reddit_graph\.npz .* never downloads"):
        RedditDataset(raw_dir=tmp_path)
    (tmp_path / "bad").mkdir()
    np.savez(tmp_path / "bad" / "reddit_data.npz", feature=np.zeros((3, 2)))
    np.savez(tmp_path / "bad" / "reddit_graph.npz", row=np.zeros(1))
    with pytest.raises(InputError, match="not a SciPy sparse matrix"):
        RedditDataset(raw_dir=tmp_path / "bad")


def tiny_arxiv(root: Path, n: int = 12, name: str = "ogbn-arxiv", split: str = "time") -> dict:
    """An ogbn-arxiv-shaped folder: edges, features, labels (one unlabelled node) and a split."""
    rng = np.random.default_rng(2)
    folder = root / name.replace("-", "_")
    raw = folder / "raw"
    edges = np.stack([rng.integers(0, n, 30), rng.integers(0, n, 30)], 1)
    write_csv(raw / "edge.csv.gz", edges)
    write_csv(raw / "num-node-list.csv.gz", [n])
    write_csv(raw / "node-feat.csv.gz", rng.normal(size=(n, 3)))
    labels = [str(x) for x in rng.integers(0, 5, n)]
    labels[3] = "nan"
    write_csv(raw / "node-label.csv.gz", labels)
    for part, ids in (("train", range(0, 8)), ("valid", range(8, 10)), ("test", range(10, 12))):
        write_csv(folder / "split" / split / f"{part}.csv.gz", list(ids))
    return {"edges": edges, "labels": labels}


def test_ogb_homogeneous_dataset_as_ogb_gives_it(tmp_path):
    truth = tiny_arxiv(tmp_path)
    data = DglNodePropPredDataset(name="ogbn-arxiv", root=tmp_path)
    graph, labels = data[0]
    split = data.get_idx_split()
    assert split["train"].tolist() == list(range(8)) and split["valid"].tolist() == [8, 9]
    assert split["test"].tolist() == [10, 11] and len(data) == 1
    assert labels.shape == (12, 1) and labels.dtype.is_floating_point and bool(torch.isnan(labels[3, 0]))
    known = [float(x) for x in truth["labels"] if x != "nan"]
    assert labels[~torch.isnan(labels)].tolist() == known and data.num_classes == int(max(known)) + 1
    assert set(graph.ndata) == {"feat"} and torch.equal(graph.src, torch.from_numpy(truth["edges"][:, 0]))


def test_ogb_mag_as_a_heterograph_with_dicts_by_type(tmp_path):
    truth = tiny_mag(tmp_path)
    data = DglNodePropPredDataset("ogbn-mag", root=str(tmp_path))
    graph, labels = data[0]
    assert set(labels) == {"paper"} and labels["paper"].dtype == torch.int64
    assert labels["paper"][:, 0].tolist() == truth["labels"].tolist()
    assert data.get_idx_split()["train"]["paper"].tolist() == [0, 1, 2, 3, 4, 5]
    assert set(graph.nodes["paper"].data) == {"feat", "year"} and graph.num_nodes("author") == 7


def test_ogb_dataset_absent_names_the_files_it_needs(tmp_path):
    with pytest.raises(InputError, match=r"never downloads.*ogbn_products/raw/edge\.csv\.gz.*sales_ranking/train"):
        DglNodePropPredDataset("ogbn-products", root=tmp_path)
    with pytest.raises(InputError, match="meta_dict"):
        DglNodePropPredDataset("ogbn-arxiv", root=tmp_path, meta_dict={})


class _FakeCSR:
    """Pickles as SciPy's csr_matrix does (the class named scipy.sparse.csr.csr_matrix, its
    arrays in the instance dict), without SciPy."""

    def __init__(self, dense: np.ndarray):
        rows, cols = np.nonzero(dense)
        self._shape, self.maxprint = dense.shape, 50
        self.data, self.indices = dense[rows, cols], cols.astype(np.int32)
        self.indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=dense.shape[0]))]).astype(np.int32)


def write_planetoid(folder: Path, stem: str, monkeypatch, citeseer_gap: bool = False) -> dict:
    """Planetoid's eight files for a graph of 30 nodes (12 labelled training rows, test rows
    stored out of order), pickled as the originals are; the truth they encode."""
    import pickle
    import sys
    import types
    from collections import defaultdict

    for name in ("scipy", "scipy.sparse", "scipy.sparse.csr"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    _FakeCSR.__module__, _FakeCSR.__qualname__ = "scipy.sparse.csr", "csr_matrix"
    monkeypatch.setattr(sys.modules["scipy.sparse.csr"], "csr_matrix", _FakeCSR, raising=False)
    rng = np.random.default_rng(3)
    n, classes, dim, train = 30, 3, 5, 12
    feat = (rng.random((n, dim)) < 0.4).astype(np.float32)
    feat[0] = 0  # a row without words: stays zero after normalising
    label = rng.integers(0, classes, n)
    test = np.array([29, 25, 27, 28, 26]) if not citeseer_gap else np.array([29, 25, 27, 26])  # 28: isolated
    allx = np.arange(25)  # rows 0..24 are allx/ally, 25..29 tx/ty in the test index's order
    onehot = np.eye(classes, dtype=np.float32)[label]
    adjacency = defaultdict(list, {i: [] for i in range(n)})
    for u, v in [(0, 1), (1, 2), (2, 0), (3, 4), (4, 3), (5, 5), (6, 29), (29, 6), (7, 8)]:
        adjacency[u].append(v)
    files = {"x": _FakeCSR(feat[:train]), "y": onehot[:train], "allx": _FakeCSR(feat[allx]), "ally": onehot[allx],
             "tx": _FakeCSR(feat[test]), "ty": onehot[test], "graph": adjacency}
    folder.mkdir(parents=True, exist_ok=True)
    for part, value in files.items():
        (folder / f"ind.{stem}.{part}").write_bytes(pickle.dumps(value, protocol=2))
    (folder / f"ind.{stem}.test.index").write_text("".join(f"{i}\n" for i in test))
    if citeseer_gap:
        feat[28], onehot[28], label[28] = 0, 0, 0
    total = feat.sum(1, keepdims=True)
    return {"feat": np.where(total > 0, feat / np.where(total > 0, total, 1), 0), "label": label, "test": np.sort(test),
            "edges": {(0, 1), (1, 0), (1, 2), (2, 1), (0, 2), (2, 0), (3, 4), (4, 3), (5, 5), (6, 29), (29, 6),
                      (7, 8), (8, 7)}, "train": train, "n": n}


@pytest.mark.parametrize("name, stem, sub, gap", [("cora", "cora_v2", "cora_v2", False),
                                                  ("citeseer", "citeseer", "citeseer", True),
                                                  ("pubmed", "pubmed", "Pubmed/raw", False)])
def test_citation_graphs_read_planetoid_files_as_dgl_builds_them(tmp_path, monkeypatch, name, stem, sub, gap):
    import distgraph.data as data

    truth = write_planetoid(tmp_path / sub, stem, monkeypatch, citeseer_gap=gap)
    cls = {"cora": data.CoraGraphDataset, "citeseer": data.CiteseerGraphDataset, "pubmed": data.PubmedGraphDataset}
    monkeypatch.setenv("DGL_DOWNLOAD_DIR", str(tmp_path))  # DGL's download folder, as no raw_dir is given
    ds = cls[name](verbose=False)
    g = ds[0]
    assert len(ds) == 1 and ds.num_classes == 3 and g.num_nodes() == truth["n"]
    assert set(zip(g.src.tolist(), g.dst.tolist())) == truth["edges"] and g.num_edges() == len(truth["edges"])
    assert np.allclose(g.ndata["feat"].numpy(), truth["feat"]) and g.ndata["feat"].dtype == torch.float32
    assert torch.equal(g.ndata["label"], torch.from_numpy(truth["label"]))
    assert torch.nonzero(g.ndata["train_mask"]).flatten().tolist() == list(range(truth["train"]))
    assert torch.nonzero(g.ndata["val_mask"]).flatten().tolist() == list(range(truth["train"], truth["n"]))
    assert torch.nonzero(g.ndata["test_mask"]).flatten().tolist() == truth["test"].tolist()
    once = data.CitationGraphDataset(name, raw_dir=tmp_path, reverse_edge=False, verbose=False)[0]
    assert once.num_edges() == (len(truth["edges"]) + 1) // 2  # each pair once, the self-loop once


def test_citation_files_missing_or_foreign_are_one_clear_error(tmp_path, monkeypatch):
    import pickle

    import distgraph.data as data

    with pytest.raises(InputError, match="never downloads"):
        data.CoraGraphDataset(raw_dir=tmp_path, verbose=False)
    write_planetoid(tmp_path / "cora_v2", "cora_v2", monkeypatch)
    (tmp_path / "cora_v2" / "ind.cora_v2.graph").write_bytes(pickle.dumps(Path("x")))  # not an array, list or dict
    with pytest.raises(InputError, match="asks for pathlib"):
        data.CoraGraphDataset(raw_dir=tmp_path, verbose=False)
