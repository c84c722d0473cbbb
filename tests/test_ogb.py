"""OGB node datasets on disk (OGB's layout, written here by the test: nothing is downloaded)
become the graphs OGB's own loaders build, with their features, labels and splits, through
`load_ogb_node` and `distgraph partition --dataset`; `add_reverse_edges` reverses every relation.

Each listed dataset has a tiny folder of its real files' shapes; what OGB builds from it (per
its `nodeproppred/master.csv`: inverse edges interleaved into the same edge type, additional
node and edge files, multi-column labels) is written out by hand in the test."""

import gzip
from pathlib import Path

import numpy as np
import pytest
import torch

from distgraph.cli.main import main
from distgraph.data import add_reverse_edges, load_ogb_node
from distgraph.partition import load_partition_book


def write_csv(path: Path, rows, header=None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as f:
        if header is not None:
            f.write(",".join(header) + "\n")
        for r in rows:
            f.write(",".join(str(x) for x in (r if isinstance(r, (list, tuple, np.ndarray)) else [r])) + "\n")


def tiny_mag(root: Path) -> dict:
    """An ogbn-mag-shaped folder: 4 node types, 4 relations, paper features, labels and a time split."""
    rng = np.random.default_rng(0)
    counts = {"author": 7, "field_of_study": 5, "institution": 3, "paper": 10}
    rels = {("author", "affiliated_with", "institution"): 6, ("author", "writes", "paper"): 15,
            ("paper", "cites", "paper"): 12, ("paper", "has_topic", "field_of_study"): 9}
    raw = root / "ogbn_mag" / "raw"
    write_csv(raw / "num-node-dict.csv.gz", [list(counts.values())], header=list(counts))
    write_csv(raw / "triplet-type-list.csv.gz", [list(c) for c in rels])
    edges = {}
    for c, m in rels.items():
        e = np.stack([rng.integers(0, counts[c[0]], m), rng.integers(0, counts[c[2]], m)], 1)
        edges[c] = e
        write_csv(raw / "relations" / "___".join(c) / "edge.csv.gz", e)
        write_csv(raw / "relations" / "___".join(c) / "num-edge-list.csv.gz", [m])
        write_csv(raw / "relations" / "___".join(c) / "edge_reltype.csv.gz", np.full((m, 1), len(edges)))
    feat = rng.normal(size=(10, 4)).astype(np.float32)
    write_csv(raw / "node-feat" / "paper" / "node-feat.csv.gz", feat)
    write_csv(raw / "node-feat" / "paper" / "node_year.csv.gz", 2000 + np.arange(10))
    write_csv(raw / "nodetype-has-label.csv.gz", [["False", "False", "False", "True"]], header=list(counts))
    labels = rng.integers(0, 3, 10)
    write_csv(raw / "node-label" / "paper" / "node-label.csv.gz", labels)
    split = root / "ogbn_mag" / "split" / "time"
    write_csv(split / "nodetype-has-split.csv.gz", [["False", "False", "False", "True"]], header=list(counts))
    for name, ids in (("train", [0, 1, 2, 3, 4, 5]), ("valid", [6, 7]), ("test", [8, 9])):
        write_csv(split / "paper" / f"{name}.csv.gz", ids)
    return {"counts": counts, "edges": edges, "feat": feat, "labels": labels}


def test_an_ogb_heterograph_on_disk_reads_with_features_labels_and_splits(tmp_path):
    truth = tiny_mag(tmp_path)
    g = load_ogb_node("ogbn-mag", tmp_path)
    assert {t: g.num_nodes(t) for t in g.ntypes} == truth["counts"]
    for c, e in truth["edges"].items():
        i = g.get_etype_id(c)
        lo, hi = int(g.etype_offsets[i]), int(g.etype_offsets[i + 1])
        assert torch.equal(g.map_to_per_ntype(g.src[lo:hi])[1], torch.from_numpy(e[:, 0]))
        assert torch.equal(g.map_to_per_ntype(g.dst[lo:hi])[1], torch.from_numpy(e[:, 1]))
    paper = g.nodes["paper"].data
    assert torch.allclose(paper["feat"], torch.from_numpy(truth["feat"]))
    assert torch.equal(paper["label"], torch.from_numpy(truth["labels"]))
    assert paper["train_mask"].sum() == 6 and paper["val_mask"][6:8].all() and paper["test_mask"][8:].all()
    assert torch.equal(paper["year"], 2000 + torch.arange(10).reshape(10, 1))
    assert "feat" not in g.nodes["author"].data and "year" not in g.nodes["author"].data
    # OGB's edge_reltype file of each relation (written as the relation's position above)
    assert [g.edges[c].data["reltype"].unique().tolist() for c in truth["edges"]] == [[1], [2], [3], [4]]
    rev = add_reverse_edges(g)
    assert len(rev.canonical_etypes) == 8 and rev.num_edges(("paper", "rev-writes", "author")) == 15
    assert torch.equal(rev.edges[("author", "writes", "paper")].data.get("x", torch.zeros(0)), torch.zeros(0))


def test_partition_reads_an_ogb_dataset_by_name(tmp_path, capsys):
    tiny_mag(tmp_path)
    code = main(["partition", "--dataset", "ogbn-mag", "--data_root", str(tmp_path), "--graph_name", "mag",
                 "--num_parts", "2", "--balance_train", "--add_reverse_edges", "--out", str(tmp_path / "parts")])
    assert code == 0, capsys.readouterr()
    book = load_partition_book(tmp_path / "parts" / "mag.json")
    assert book.num_partitions() == 2 and len(book.canonical_etypes) == 8 and book.num_nodes("paper") == 10
    assert main(["partition", "--dataset", "ogbn-arxiv", "--data_root", str(tmp_path), "--graph_name", "a",
                 "--num_parts", "1", "--out", str(tmp_path / "p")]) == 2
    assert "no OGB dataset ogbn-arxiv" in capsys.readouterr().err
    assert main(["partition", "--dataset", "ogbn-foo", "--data_root", str(tmp_path), "--graph_name", "a",
                 "--num_parts", "1", "--out", str(tmp_path / "p")]) == 2
    assert "'ogbn-foo' is not an OGB node dataset" in capsys.readouterr().err


# A 6-node graph with 5 edges (a self-loop among them) and the graph OGB builds from it with
# add_inverse_edge: each edge followed by its reverse, in the one edge type.
EDGES = [[0, 1], [1, 2], [2, 0], [3, 4], [5, 5]]
INVERSE_SRC = [0, 1, 1, 2, 2, 0, 3, 4, 5, 5]
INVERSE_DST = [1, 0, 2, 1, 0, 2, 4, 3, 5, 5]
SPLIT = {"train": [0, 1, 2], "valid": [3], "test": [4, 5]}


def homogeneous_folder(root: Path, name: str, split: str, labels, node_feat=None, extra=None) -> Path:
    """The CSV files OGB's `read_csv_graph_raw` reads, plus the split: `extra` maps other raw
    file names (e.g. "node_year") to their rows."""
    folder = root / name.replace("-", "_")
    raw = folder / "raw"
    write_csv(raw / "edge.csv.gz", EDGES)
    write_csv(raw / "num-node-list.csv.gz", [6])
    write_csv(raw / "num-edge-list.csv.gz", [len(EDGES)])
    write_csv(raw / "node-label.csv.gz", labels)
    if node_feat is not None:
        write_csv(raw / "node-feat.csv.gz", node_feat)
    for file, rows in (extra or {}).items():
        write_csv(raw / f"{file}.csv.gz", rows)
    for part, ids in SPLIT.items():
        write_csv(folder / "split" / split / f"{part}.csv.gz", ids)
    return folder


def check_split(g) -> None:
    assert g.ndata["train_mask"].tolist() == [True, True, True, False, False, False]
    assert g.ndata["val_mask"].tolist() == [False, False, False, True, False, False]
    assert g.ndata["test_mask"].tolist() == [False, False, False, False, True, True]


def test_ogbn_products_gets_every_edge_and_its_reverse_in_one_edge_type(tmp_path):
    feat = np.arange(18, dtype=np.float32).reshape(6, 3) / 4
    homogeneous_folder(tmp_path, "ogbn-products", "sales_ranking", [[4], [0], [46], [1], [1], [2]], feat)
    g = load_ogb_node("ogbn-products", tmp_path)
    assert g.canonical_etypes == [("_N", "_E", "_N")] and g.num_nodes() == 6
    assert g.src.tolist() == INVERSE_SRC and g.dst.tolist() == INVERSE_DST
    assert torch.equal(g.ndata["feat"], torch.from_numpy(feat))
    assert g.ndata["label"].tolist() == [4, 0, 46, 1, 1, 2] and g.ndata["label"].dtype == torch.int64
    check_split(g)


@pytest.mark.parametrize("species_file", ["node_species", "species"])  # OGB reads the older name too
def test_ogbn_proteins_keeps_112_label_columns_edge_features_on_both_directions_and_species(tmp_path, species_file):
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, (6, 112))
    edge_feat = rng.random((len(EDGES), 8)).round(3).astype(np.float32)
    homogeneous_folder(tmp_path, "ogbn-proteins", "species", labels,
                       extra={"edge-feat": edge_feat, species_file: [[3702], [3702], [4932], [4932], [9606], [9606]]})
    g = load_ogb_node("ogbn-proteins", tmp_path)
    assert g.src.tolist() == INVERSE_SRC and g.dst.tolist() == INVERSE_DST
    assert g.ndata["label"].shape == (6, 112) and torch.equal(g.ndata["label"], torch.from_numpy(labels))
    assert torch.equal(g.edata["feat"], torch.from_numpy(edge_feat[[0, 0, 1, 1, 2, 2, 3, 3, 4, 4]]))
    assert g.ndata["species"].tolist() == [[3702], [3702], [4932], [4932], [9606], [9606]]
    assert "feat" not in g.ndata  # ogbn-proteins has no node features
    check_split(g)


def test_ogbn_arxiv_stays_directed_with_its_year(tmp_path):
    feat = np.ones((6, 2), dtype=np.float32)
    homogeneous_folder(tmp_path, "ogbn-arxiv", "time", [[0], [1], [2], [3], [4], [39]], feat,
                       extra={"node_year": [[2010], [2011], [2012], [2013], [2019], [2020]]})
    g = load_ogb_node("ogbn-arxiv", tmp_path)
    assert g.src.tolist() == [e[0] for e in EDGES] and g.dst.tolist() == [e[1] for e in EDGES]
    assert g.ndata["year"].tolist() == [[2010], [2011], [2012], [2013], [2019], [2020]]
    assert g.ndata["label"].tolist() == [0, 1, 2, 3, 4, 39]
    check_split(g)


def test_ogbn_papers100m_reads_its_npz_files_with_unlabelled_nodes_as_minus_one(tmp_path):
    folder = tmp_path / "ogbn_papers100M"
    (folder / "raw").mkdir(parents=True)
    feat = np.arange(12, dtype=np.float32).reshape(6, 2)
    np.savez_compressed(folder / "raw" / "data.npz", edge_index=np.array(EDGES).T, num_nodes_list=np.array([6]),
                        num_edges_list=np.array([len(EDGES)]), node_feat=feat, node_year=np.full((6, 1), 2015))
    np.savez_compressed(folder / "raw" / "node-label.npz",
                        node_label=np.array([[3.0], [np.nan], [171.0], [np.nan], [0.0], [1.0]], dtype=np.float32))
    for part, ids in SPLIT.items():
        write_csv(folder / "split" / "time" / f"{part}.csv.gz", ids)
    g = load_ogb_node("ogbn-papers100M", tmp_path)
    assert g.src.tolist() == [e[0] for e in EDGES] and g.dst.tolist() == [e[1] for e in EDGES]
    assert torch.equal(g.ndata["feat"], torch.from_numpy(feat)) and g.ndata["year"].tolist() == [[2015]] * 6
    assert g.ndata["label"].tolist() == [3, -1, 171, -1, 0, 1]
    check_split(g)


def test_partition_of_ogbn_products_holds_the_inverse_edges(tmp_path, capsys):
    homogeneous_folder(tmp_path, "ogbn-products", "sales_ranking", [[0]] * 6, np.zeros((6, 2), dtype=np.float32))
    code = main(["partition", "--dataset", "ogbn-products", "--data_root", str(tmp_path), "--graph_name", "products",
                 "--num_parts", "2", "--part_method", "random", "--out", str(tmp_path / "parts")])
    assert code == 0, capsys.readouterr()
    book = load_partition_book(tmp_path / "parts" / "products.json")
    assert book.num_edges() == 10 and book.canonical_etypes == [("_N", "_E", "_N")]
