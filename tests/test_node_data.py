"""Node features, labels and split masks given beside an edge list (`--node_data`): a CSV or
Parquet table keyed by the edge list's ids, nodes only in the table kept as isolated nodes,
edge-list nodes without a row counted; the examples refuse a graph without the fields they
need in one line."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from distgraph.cli.main import main
from distgraph.data import load_edgelist
from distgraph.data.node_table import attach_node_data
from distgraph.errors import InputError
from distgraph.partition import load_partition

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "graphsage" / "train_dist.py"


def _string_graph(tmp_path: Path) -> Path:
    edges = tmp_path / "edges.csv"
    edges.write_text("alice,bob\nbob,carol\ncarol,alice\ndave,alice\n")
    return edges


def test_a_csv_table_keyed_by_names_becomes_node_data(tmp_path, capsys):
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("id,name,age,score,label,train_mask,val_mask,test_mask\n"
                     "carol,Carol,41,0.9,1,0,0,1\nalice,Alice,30,0.5,1,1,0,0\nerin,Erin,22,,0,true,0,0\n"
                     "bob,Bob,25,0.1,0,0,1,0\n")
    g, said = attach_node_data(load_edgelist(_string_graph(tmp_path), tensors=False), nodes)
    names = list(g.node_names)
    assert names == ["alice", "bob", "carol", "dave", "erin"] and g.num_nodes() == 5 and g.num_edges() == 4
    row = {n: i for i, n in enumerate(names)}
    assert g.ndata["feat"].dtype == np.float32 and g.ndata["feat"].shape == (5, 2)  # age, score (name is text)
    assert g.ndata["feat"][row["carol"]].tolist() == pytest.approx([41, 0.9])
    assert g.ndata["feat"][row["erin"]].tolist() == [22, 0]  # a missing value is 0
    assert g.ndata["feat"][row["dave"]].tolist() == [0, 0]  # no row
    assert [int(g.ndata["label"][row[n]]) for n in names] == [1, 0, 1, -1, 0]
    assert [n for n in names if g.ndata["train_mask"][row[n]]] == ["alice", "erin"]
    assert [n for n in names if g.ndata["test_mask"][row[n]]] == ["carol"]
    text = "\n".join(said)
    assert "feat (2 columns: age, score), label, train_mask, val_mask, test_mask" in text
    assert "left out (not numeric): name" in text and "1 nodes only in" in text
    assert "1 edge-list nodes have no row" in text and "(e.g. 'dave')" in text


def test_a_parquet_table_with_a_feat_list_and_integer_ids(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    edges = tmp_path / "edges.txt"
    edges.write_text("0 1\n1 2\n2 0\n")
    pq.write_table(pa.table({"id": [4, 0, 2], "feat": [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]],
                             "train_mask": [True, False, True]}), tmp_path / "nodes.parquet")
    g, said = attach_node_data(load_edgelist(edges, tensors=False), tmp_path / "nodes.parquet")
    assert g.num_nodes() == 5 and g.ndata["feat"].tolist() == [[3, 4], [0, 0], [5, 6], [0, 0], [1, 2]]
    assert g.ndata["train_mask"].tolist() == [False, False, True, False, True] and "label" not in g.ndata
    assert any("2 nodes only in" in line for line in said)  # 3 and 4
    assert any("1 edge-list nodes have no row" in line and "(e.g. 1)" in line for line in said)


@pytest.mark.parametrize("text, message", [
    ("name,label\na,1\n", "has no 'id' column"),
    ("id,label\nalice,1\nalice,0\n", "id 'alice' has 2 rows"),
    ("id,train_mask\nalice,2\n", "'train_mask' must hold 0/1 or true/false, found"),
    ("id,label\nalice,0.5\n", "'label' must hold integer classes"),
])
def test_bad_node_tables_are_one_line(tmp_path, text, message):
    (tmp_path / "nodes.csv").write_text(text)
    with pytest.raises(InputError, match=message):
        attach_node_data(load_edgelist(_string_graph(tmp_path), tensors=False), tmp_path / "nodes.csv")


def test_a_header_read_as_an_edge_is_warned_about(tmp_path, capsys):
    edges = tmp_path / "edges.csv"
    edges.write_text("person,friend\nalice,bob\nbob,carol\n")
    assert load_edgelist(edges, tensors=False).num_edges() == 3
    assert "line 1 ('person,friend') was read as an edge" in capsys.readouterr().err
    assert load_edgelist(edges, header=True, tensors=False).num_edges() == 2
    assert capsys.readouterr().err == ""
    edges.write_text("alice,bob\nbob,carol\n")  # names that occur again: edges, nothing said
    load_edgelist(edges, tensors=False)
    assert capsys.readouterr().err == ""


@pytest.mark.multiprocess  # two training processes
def test_the_cli_partitions_an_edge_list_with_its_node_data_and_the_example_checks_fields(tmp_path, capsys):
    rng = np.random.default_rng(0)
    n = 120
    src, dst = rng.integers(0, n, 600), rng.integers(0, n, 600)
    (tmp_path / "edges.csv").write_text("".join(f"n{u},n{v}\n" for u, v in zip(src, dst)))
    label = rng.integers(0, 3, n)
    rows = [f"n{i},{label[i]},{int(i % 5 < 3)},{int(i % 5 == 3)},{int(i % 5 == 4)},{label[i] + rng.random():.3f}"
            for i in range(n)]
    (tmp_path / "nodes.csv").write_text("id,label,train_mask,val_mask,test_mask,f0\n" + "\n".join(rows) + "\n")
    for name, extra in (("plain", []), ("mine", ["--node_data", str(tmp_path / "nodes.csv")])):
        assert main(["partition", "--input", str(tmp_path / "edges.csv"), "--graph_name", name, "--num_parts", "1",
                     "--out", str(tmp_path / name), *extra]) == 0
    part = load_partition(tmp_path / "mine" / "mine.json", 0)
    assert set(part.node_data["_N"]) == {"feat", "label", "train_mask", "val_mask", "test_mask"}
    args = ["--graph_name", "x", "--num_epochs", "1", "--batch_size", "32", "--fan_out", "3,3"]
    ok = subprocess.run([sys.executable, str(EXAMPLE), *args, "--graph_name", "mine", "--part_config",
                         str(tmp_path / "mine" / "mine.json")], capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0 and "best val acc" in ok.stdout, ok.stderr[-2000:]
    bare = subprocess.run([sys.executable, str(EXAMPLE), *args, "--graph_name", "plain", "--part_config",
                           str(tmp_path / "plain" / "plain.json")], capture_output=True, text=True, timeout=300)
    assert bare.returncode == 1 and "have no feat, label, train_mask, val_mask, test_mask" in bare.stderr
    assert "distgraph partition --node_data" in bare.stderr and "KeyError" not in bare.stderr
