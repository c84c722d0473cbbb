import signal
import subprocess
import sys
import zipfile

import numpy as np
import pytest
import torch

from distgraph.data import generate_mag, generate_sbm, load_edgelist, load_graph, load_npz, save_npz
from distgraph.errors import InputError
from distgraph.tensor_graph import Graph


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
    # a scalar that describes the file (as ../shared/peers/dgl/gen_graph.py writes `seed`) is skipped
    np.savez(tmp_path / "s.npz", src=np.array([0, 1]), dst=np.array([1, 0]), num_nodes=3, seed=np.int64(42),
             label=np.arange(3))
    g = load_npz(tmp_path / "s.npz")
    assert list(g.ndata) == ["label"] and not g.edata


def test_npz_misaligned_ids_are_read_aligned_and_feature_rows_stay_mapped(tmp_path):
    """np.savez leaves members at any byte offset; numpy copies misaligned arrays in every
    bincount or index they take part in, so 1-D arrays come back aligned."""
    rng = np.random.default_rng(0)
    src, dst = rng.integers(0, 50, 400), rng.integers(0, 50, 400)
    feat = rng.standard_normal((50, 3)).astype(np.float32)
    np.savez(tmp_path / "g.npz", src=src, dst=dst, num_nodes=50, ndata_label_x=np.arange(50), feat=feat)
    with zipfile.ZipFile(tmp_path / "g.npz") as z:  # the file's own layout: some member is misaligned
        starts = {i.filename: i.header_offset + 30 + len(i.filename) + len(i.extra) for i in z.infolist()}
    assert any(s % 8 for s in starts.values())
    g = load_npz(tmp_path / "g.npz", tensors=False)
    for a, want in ((g.src, src), (g.dst, dst), (g.ndata["ndata_label_x"], np.arange(50))):
        assert a.flags.aligned and np.array_equal(a, want)
    assert isinstance(g.ndata["feat"].base, np.memmap) and np.array_equal(g.ndata["feat"], feat)
    assert np.array_equal(np.asarray(g.in_degrees()), np.bincount(dst, minlength=50))


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


@pytest.mark.parametrize("n", [1, 10, 5000, 300_000])
def test_sbm_draws_find_the_member_a_binary_search_finds(n):
    """The guide table's search equals searchsorted on the accumulated weights, at slice edges,
    at weights' exact boundaries and just below them, and at both ends."""
    from distgraph.data.sbm import CommunitySampler, power_law_weights

    rng = np.random.default_rng(n)
    pool = CommunitySampler(rng, rng.integers(0, 7, n), power_law_weights(rng, n, 2.1, 1000.0), 7)
    cum = pool.cum
    x = np.concatenate([rng.random(100_000) * cum[-1], cum[:2000], np.nextafter(cum[:2000], 0),
                        np.arange(min(n, 2000)) * (cum[-1] / n), [0.0, cum[-1], np.nextafter(cum[-1], np.inf)]])
    assert np.array_equal(pool._locate(x), np.minimum(np.searchsorted(cum, x, side="right"), n - 1))


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
    # one affiliation per author and 3 authors per paper, plus one edge for each node left without
    assert 400 <= g.num_edges("affiliated_with") <= 420 and 1500 <= g.num_edges("writes") <= 1900
    assert set(g.nodes["paper"].data) == {"feat", "label", "train_mask", "val_mask", "test_mask"}
    assert not g.nodes["author"].data
    for c in g.canonical_etypes:  # every node has an edge of each of its relations, either way
        u, v = g.type_edges(c)
        assert bool((torch.bincount(u, minlength=g.num_nodes(c[0])) > 0).all())
        assert bool((torch.bincount(v, minlength=g.num_nodes(c[2])) > 0).all())
    u, v = g.type_edges("cites")
    assert not bool((u == v).any())


def test_mag_labels_are_carried_by_authors_not_by_features():
    g = generate_mag(3000, 2000, 50, 100, num_classes=8, feat_dim=16, seed=1)
    label, feat = g.nodes["paper"].data["label"], g.nodes["paper"].data["feat"]
    author, paper = g.type_edges("writes")
    # an author's papers share a venue far more often than chance (1/8)
    first = torch.full((g.num_nodes("author"),), -1).scatter_(0, author, label[paper])
    assert float((label[paper] == first[author]).float().mean()) > 0.4
    # the features' class means (by venue) differ little: features tell the topic, rarely the venue
    venue_means = torch.stack([feat[label == c].mean(0) for c in range(8)])
    assert float(venue_means.std(0).mean()) < 0.25


@pytest.mark.parametrize(
    "text, message",
    [
        ("0 1\n1\n2 0 3\n", "line 2: expected 2 fields like the first line, found 1"),  # 6 tokens = 2 x 3 lines
        ("0 1 5\n1 2\n2 0 1 3\n", "line 2: expected 3 fields like the first line, found 2"),
        ("a b\nc\nd e f\n", "line 2: expected 2 fields like the first line, found 1"),
        ("0,1\n1,,2\n", "line 2: expected 2 fields like the first line, found 3"),
        ("0,1\n,2\n", "line 2: empty field"),
    ],
)
def test_every_line_field_count_is_checked(tmp_path, text, message):
    f = tmp_path / "ragged.txt"
    f.write_text(text)
    with pytest.raises(InputError, match=message):
        load_edgelist(f)


def test_error_lines_are_physical_line_numbers(tmp_path):
    f = tmp_path / "e.txt"
    f.write_text("# comment\n\n0 1\n# again\n1 -2\n")
    with pytest.raises(InputError, match="line 5: node id out of range.*'1 -2'"):
        load_edgelist(f)
    f.write_text("src dst\n# c\na b\nc\n")
    with pytest.raises(InputError, match="line 4: expected 2 fields"):
        load_edgelist(f)


def test_byte_order_mark_and_crlf_are_not_data(tmp_path):
    f = tmp_path / "bom.csv"
    f.write_bytes("\ufeff0,1\r\n1,2\r\n2,0\r\n".encode())
    g = load_edgelist(f)
    assert g.src.tolist() == [0, 1, 2] and g.dst.tolist() == [1, 2, 0] and g.node_names is None
    f.write_bytes("\ufeffsrc,dst\r\nx,y\r\ny,z\r\n".encode())
    g = load_edgelist(f)
    assert g.node_names.tolist() == ["x", "y", "z"] and g.src.tolist() == [0, 1]


def test_a_binary_file_is_not_a_text_edge_list(tmp_path):
    f = tmp_path / "img.csv"
    f.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe")
    with pytest.raises(InputError, match="img.csv is not a UTF-8 text edge list"):
        load_edgelist(f)
    f.write_bytes(b"0 1\n1 2\n" + b"2 \xff\n")  # undecodable after a valid head
    with pytest.raises(InputError, match="img.csv is not a UTF-8 text edge list"):
        load_edgelist(f)


@pytest.mark.parametrize("first", ["src,dst", "Source,Target", "FROM,TO", "u,v", '"node1","node2"', "head,tail"])
def test_header_of_column_names_is_detected_with_string_ids(tmp_path, first):
    f = tmp_path / "e.csv"
    f.write_text(f"{first}\nalice,bob\nbob,carol\n")
    g = load_edgelist(f)
    assert g.node_names.tolist() == ["alice", "bob", "carol"]
    assert g.src.tolist() == [0, 1] and g.dst.tolist() == [1, 2]


def test_other_header_names_need_the_header_flag(tmp_path):
    f = tmp_path / "e.csv"
    f.write_text("person,friend\nalice,bob\n")
    assert load_edgelist(f).node_names.tolist() == ["person", "friend", "alice", "bob"]
    g = load_edgelist(f, header=True)
    assert g.node_names.tolist() == ["alice", "bob"] and g.num_edges() == 1
    f.write_text("src dst\n0 1\n")
    assert load_edgelist(f, header=False).node_names.tolist() == ["src", "dst", "0", "1"]


def test_trailing_empty_field_is_stripped_not_a_weight(tmp_path):
    f = tmp_path / "e.tsv"
    f.write_text("0\t1\t\n1\t2\t\n")
    g = load_edgelist(f)
    assert g.src.tolist() == [0, 1] and g.dst.tolist() == [1, 2] and not g.edata
    f.write_text("a,b,\nb,c,\n")
    g = load_edgelist(f)
    assert g.node_names.tolist() == ["a", "b", "c"] and not g.edata


@pytest.mark.parametrize(
    "text, kwargs, message",
    [
        ("0 1\n99999999999999999999 2\n", {}, "line 2: node id does not fit in 64 bits"),
        ("src,dst\n", {}, "has a header line \\('src,dst'\\) but no edges"),
        ("0,1\n", {"header": True}, "has a header line \\('0,1'\\) but no edges"),
        ("0;1\n1;2\n", {}, "found 1 fields; pass --delimiter"),
    ],
)
def test_edge_list_edge_cases_are_one_clear_error(tmp_path, text, kwargs, message):
    f = tmp_path / "e.txt"
    f.write_text(text)
    with pytest.raises(InputError, match=message):
        load_edgelist(f, **kwargs)


def test_integer_fast_path_and_token_path_agree(tmp_path):
    rng = np.random.default_rng(0)
    s, d, w = rng.integers(0, 50, 300), rng.integers(0, 50, 300), rng.random(300).astype(np.float32)
    fast, slow = tmp_path / "fast.csv", tmp_path / "slow.csv"
    rows = [f"{a},{b},{c}" for a, b, c in zip(s, d, w)]
    fast.write_text("src,dst,weight\n# comment\n" + "\n".join(rows) + "\n")
    slow.write_text("src,dst,weight\n# comment\n" + ",\n".join(rows) + ",\n")  # trailing comma: token path
    for f in (fast, slow):
        g = load_edgelist(f)
        assert g.src.tolist() == s.tolist() and g.dst.tolist() == d.tolist() and g.node_names is None
        assert torch.equal(g.edata["weight"], torch.from_numpy(w))


def test_saving_over_the_file_the_graph_is_mapped_from(tmp_path):
    """np.savez truncated the mapped file under the graph's arrays (SIGBUS); run apart so a crash is a failure."""
    script = f"""
import torch
from distgraph.data import generate_sbm, load_npz, save_npz
g = generate_sbm(3000, 30000, feat_dim=16, seed=0)
f = {str(tmp_path / "same.npz")!r}
save_npz(g, f)
h = load_npz(f)
h.ndata["train_mask"] = h.ndata["label"] == 0
save_npz(h, f)
k = load_npz(f)
assert torch.equal(k.src, g.src) and torch.equal(k.ndata["feat"], g.ndata["feat"])
assert torch.equal(k.ndata["train_mask"], g.ndata["label"] == 0)
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["same.npz"]  # no temporary file left


def test_save_npz_writes_exactly_the_name_given(tmp_path, sbm):
    save_npz(sbm, tmp_path / "graph.bin")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["graph.bin"]
    g = load_graph(tmp_path / "graph.bin")  # recognised by its zip signature
    assert torch.equal(g.src, sbm.src) and torch.equal(g.ndata["feat"], sbm.ndata["feat"])
    (tmp_path / "graph.bin").rename(tmp_path / "G.NPZ")
    assert load_graph(tmp_path / "G.NPZ").num_edges() == sbm.num_edges()


def test_compressed_big_endian_and_fortran_arrays(tmp_path):
    src, dst = np.array([0, 1, 2, 3]), np.array([1, 2, 3, 0])
    feat = np.asfortranarray(np.arange(10, dtype=np.float32).reshape(5, 2))
    np.savez_compressed(tmp_path / "c.npz", src=src, dst=dst, num_nodes=5, feat=feat, w=np.arange(4.0))
    np.savez(tmp_path / "f.npz", src=src.astype(">i8"), dst=dst.astype(">i4"), num_nodes=np.array(5, ">i8"),
             feat=feat.astype(">f4"), w=np.arange(4.0))
    for name in ("c.npz", "f.npz"):
        g = load_npz(tmp_path / name)
        assert g.src.tolist() == [0, 1, 2, 3] and g.dst.tolist() == [1, 2, 3, 0] and g.num_nodes() == 5
        assert g.ndata["feat"].tolist() == feat.tolist() and g.edata["w"].tolist() == [0.0, 1.0, 2.0, 3.0]


@pytest.mark.parametrize(
    "arrays, message",
    [
        (dict(names=np.array(list("abcde"))), "array 'names' has dtype <U1; it must hold numbers"),
        (dict(num_nodes=np.array([5, 6])), "'num_nodes' has shape \\(2,\\); a homogeneous graph needs one count"),
        (dict(num_nodes=np.array(5.0)), "'num_nodes' must hold non-negative integers, got float64"),
        (dict(meta=np.array([{"a": 1}], dtype=object)), "array 'meta' holds Python objects, which need pickle"),
    ],
)
def test_npz_arrays_of_the_wrong_kind_are_named(tmp_path, arrays, message):
    np.savez(tmp_path / "g.npz", src=np.array([0, 1, 2, 3]), dst=np.array([1, 2, 3, 0]), **arrays)
    with pytest.raises(InputError, match=message):
        load_npz(tmp_path / "g.npz")


def test_single_custom_type_and_node_names_round_trip(tmp_path):
    g = Graph.from_hetero({("user", "follows", "user"): ([0, 1], [1, 2])}, {"user": 3},
                          ndata={"user": {"age": torch.tensor([30, 40, 50])}})
    save_npz(g, tmp_path / "u.npz")
    h = load_npz(tmp_path / "u.npz")
    assert h.ntypes == ["user"] and h.canonical_etypes == [("user", "follows", "user")]
    assert h.src.tolist() == [0, 1] and h.nodes["user"].data["age"].tolist() == [30, 40, 50]
    f = tmp_path / "e.tsv"
    f.write_text("bob\talice\nalice\tcarol\n")
    save_npz(load_edgelist(f), tmp_path / "names.npz")
    k = load_npz(tmp_path / "names.npz")
    assert k.node_names.tolist() == ["bob", "alice", "carol"] and k.is_homogeneous and not k.ndata


def test_generators_reject_impossible_requests():
    def too_long(*_):
        raise TimeoutError("generate_sbm loops forever")

    old = signal.signal(signal.SIGALRM, too_long)
    signal.alarm(30)
    try:  # every community has <= 1 node and every edge stays inside: all draws are self-loops
        with pytest.raises(InputError, match="could not draw 5 edges without self-loops"):
            generate_sbm(2, 5, num_classes=100, p_in=1.0)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    with pytest.raises(InputError, match="generate_mag needs num_institutions >= 1, got 0"):
        generate_mag(100, 100, 0, 10)
