import numpy as np
import pytest
import torch

from distgraph.data import generate_mag, generate_sbm, load_edgelist, load_npz, save_npz
from distgraph.errors import InputError


def test_npz_round_trip_homogeneous(tmp_path, sbm):
    save_npz(sbm, tmp_path / "g.npz")
    g = load_npz(tmp_path / "g.npz")
    assert torch.equal(g.src, sbm.src) and torch.equal(g.dst, sbm.dst) and g.num_nodes() == sbm.num_nodes()
    for k in ("feat", "label", "train_mask", "val_mask", "test_mask"):
        assert torch.equal(g.ndata[k], sbm.ndata[k])


def test_npz_by_hand_classifies_arrays_by_first_dimension(tmp_path):
    np.savez(tmp_path / "g.npz", src=np.array([0, 1, 2, 3]), dst=np.array([1, 2, 3, 0]), num_nodes=5,
             feat=np.ones((5, 2), np.float32), weight=np.arange(4.0))
    g = load_npz(tmp_path / "g.npz")
    assert g.num_nodes() == 5 and list(g.ndata) == ["feat"] and g.edata["weight"].tolist() == [0, 1, 2, 3]


def test_npz_ambiguous_and_misshapen_arrays_are_rejected(tmp_path):
    np.savez(tmp_path / "a.npz", src=np.array([0, 1]), dst=np.array([1, 0]), x=np.zeros(2))
    with pytest.raises(InputError, match="rename it 'ndata/x' or 'edata/x'"):
        load_npz(tmp_path / "a.npz")
    np.savez(tmp_path / "b.npz", src=np.array([0, 1]), dst=np.array([1, 2]), x=np.zeros(7))
    with pytest.raises(InputError, match="array 'x' has shape \\(7,\\)"):
        load_npz(tmp_path / "b.npz")
    np.savez(tmp_path / "c.npz", src=np.array([0, 1]))
    with pytest.raises(InputError, match="has no 'dst' array"):
        load_npz(tmp_path / "c.npz")


def test_npz_missing_and_truncated_files(tmp_path, sbm):
    with pytest.raises(InputError, match="does not exist"):
        load_npz(tmp_path / "none.npz")
    save_npz(sbm, tmp_path / "g.npz")
    data = (tmp_path / "g.npz").read_bytes()
    (tmp_path / "t.npz").write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match="t.npz"):
        load_npz(tmp_path / "t.npz")


def test_npz_round_trip_heterogeneous(tmp_path, mag):
    save_npz(mag, tmp_path / "m.npz")
    g = load_npz(tmp_path / "m.npz")
    assert g.ntypes == mag.ntypes and g.canonical_etypes == mag.canonical_etypes
    assert torch.equal(g.src, mag.src) and torch.equal(g.dst, mag.dst)
    assert torch.equal(g.nodes["paper"].data["feat"], mag.nodes["paper"].data["feat"])


def test_edge_list_integer_ids_with_header_comments_and_weights(tmp_path):
    f = tmp_path / "e.csv"
    f.write_text("src,dst,w\n# a comment\n0,1,0.5\n\n1,2,1.5\n2,0,2.5\n")
    g = load_edgelist(f)
    assert g.src.tolist() == [0, 1, 2] and g.dst.tolist() == [1, 2, 0]
    assert g.edata["weight"].tolist() == [0.5, 1.5, 2.5]


def test_edge_list_string_ids_are_numbered_in_order_of_appearance(tmp_path):
    f = tmp_path / "e.tsv"
    f.write_text("bob\talice\nalice\tcarol\ncarol\tbob\n")
    g = load_edgelist(f)
    assert g.node_names.tolist() == ["bob", "alice", "carol"]
    assert g.src.tolist() == [0, 1, 2] and g.dst.tolist() == [1, 2, 0] and g.num_nodes() == 3


@pytest.mark.parametrize(
    "text, kwargs, message",
    [
        ("0 1 2 3\n1 2 3 4\n", {}, "line 1: expected 'src dst' or 'src dst weight', found 4"),
        ("0 1\n1 2 3 4\n", {}, "line 2: expected 2 fields like the first line, found 4"),
        ("0 1\n1\n2 0\n", {}, "line 2: expected 2 fields"),
        ("0 1\n1 7\n", {"num_nodes": 5}, "line 2: node id out of range"),
        ("0 1\n-1 2\n", {}, "line 2: node id out of range"),
        ("0 1 x\n1 2 y\n", {}, "third column must be a numeric edge weight"),
        ("# only a comment\n", {}, "has no edges"),
    ],
)
def test_bad_edge_lists_name_the_line(tmp_path, text, kwargs, message):
    f = tmp_path / "bad.txt"
    f.write_text(text)
    with pytest.raises(InputError, match=message):
        load_edgelist(f, **kwargs)


def test_sbm_generator_is_seeded_and_community_structured():
    a, b = generate_sbm(2000, 20000, seed=5), generate_sbm(2000, 20000, seed=5)
    assert torch.equal(a.src, b.src) and torch.equal(a.ndata["feat"], b.ndata["feat"])
    assert a.num_edges() == 20000 and bool((a.src != a.dst).all())
    label = a.ndata["label"]
    assert 0.75 < float((label[a.src] == label[a.dst]).float().mean()) < 0.9  # p_in = 0.8 plus chance
    masks = [a.ndata[k] for k in ("train_mask", "val_mask", "test_mask")]
    assert int(sum(m.long() for m in masks).max()) == 1  # disjoint
    # features carry the label: per-class means differ far more than the noise of a mean
    means = torch.stack([a.ndata["feat"][label == c].mean(0) for c in range(8)])
    assert float(means.std(0).mean()) > 0.08


def test_mag_generator_shape():
    g = generate_mag(500, 400, 20, 30, seed=0)
    assert g.ntypes == ["paper", "author", "institution", "field_of_study"]
    assert [c[1] for c in g.canonical_etypes] == ["writes", "cites", "affiliated_with", "has_topic"]
    assert g.num_edges("affiliated_with") == 400 and g.num_edges("writes") == 1500
    assert set(g.nodes["paper"].data) == {"feat", "label", "train_mask", "val_mask", "test_mask"}
    assert not g.nodes["author"].data
