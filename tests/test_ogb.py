"""OGB node datasets on disk (OGB's CSV layout, written here by the test: nothing is
downloaded) become graphs with their features, labels and splits, through `load_ogb_node` and
`distgraph partition --dataset`; `add_reverse_edges` reverses every relation."""

import gzip
from pathlib import Path

import numpy as np
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
    feat = rng.normal(size=(10, 4)).astype(np.float32)
    write_csv(raw / "node-feat" / "paper" / "node-feat.csv.gz", feat)
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
    assert "feat" not in g.nodes["author"].data
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
