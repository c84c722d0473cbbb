"""The range partition book against brute-force answers from the partition files."""

import json

import pytest
import torch

from distgraph.errors import InputError
from distgraph.partition import load_partition, load_partition_book, partition_graph


@pytest.fixture(scope="module")
def homo(tmp_path_factory, sbm):
    d = tmp_path_factory.mktemp("homo")
    partition_graph(sbm, "g", 4, d)
    return d / "g.json"


@pytest.fixture(scope="module")
def hetero(tmp_path_factory, mag):
    d = tmp_path_factory.mktemp("hetero")
    partition_graph(mag, "mag", 3, d)
    return d / "mag.json"


def owner_by_brute_force(cfg, num_parts, n):
    owner = torch.full((n,), -1)
    for p in range(num_parts):
        part = load_partition(cfg, p)
        owner[part.global_nid[: part.num_inner_nodes]] = p
    return owner


def test_homogeneous_answers_match_the_files(homo, sbm):
    book = load_partition_book(homo)
    assert book.num_partitions() == 4 and book.is_homogeneous
    owner = owner_by_brute_force(homo, 4, sbm.num_nodes())
    assert (owner >= 0).all()
    ids = torch.randint(0, sbm.num_nodes(), (5000,))
    assert torch.equal(book.nid2partid(ids), owner[ids])
    for p in range(4):
        part = load_partition(homo, p)
        owned = part.global_nid[: part.num_inner_nodes]
        assert torch.equal(book.partid2nids(p), owned)
        assert torch.equal(book.nid2localnid(owned[[3, 0, 3]], p), torch.tensor([3, 0, 3]))
        assert torch.equal(book.eid2partid(part.eids[: 10].clone()).unique(), torch.tensor([p]))
    meta = book.metadata()
    assert [m["machine_id"] for m in meta] == [0, 1, 2, 3]
    assert sum(m["num_nodes"] for m in meta) == sbm.num_nodes()
    assert sum(m["num_edges"] for m in meta) == sbm.num_edges()


def test_heterogeneous_answers_match_the_files(hetero, mag):
    book = load_partition_book(hetero)
    cfg = json.loads(hetero.read_text())
    n = mag.num_nodes()
    owner = owner_by_brute_force(hetero, 3, n)
    homo_ids = torch.arange(n)
    ntype, per_type = book.map_to_per_ntype(homo_ids)
    for ti, t in enumerate(mag.ntypes):
        # the homogeneous ids of each type are the union of its ranges, in partition order
        expect = torch.cat([torch.arange(s, e) for s, e in cfg["node_map"][t]])
        assert torch.equal(homo_ids[ntype == ti], expect)
        assert torch.equal(per_type[ntype == ti], torch.arange(mag.num_nodes(t)))
        assert torch.equal(book.map_to_homo_nid(torch.arange(mag.num_nodes(t)), t), expect)
        assert torch.equal(book.nid2partid(torch.arange(mag.num_nodes(t)), t), owner[expect])
        for p in range(3):
            ids = book.partid2nids(p, t)
            assert torch.equal(book.nid2localnid(ids, p, t), torch.arange(ids.numel()))
    # homogeneous ids on a heterogeneous graph: the default type means "homogeneous"
    assert torch.equal(book.nid2partid(homo_ids), owner)
    assert torch.equal(book.partid2eids(1, "cites"), torch.arange(*book.edge_range(1, ("paper", "cites", "paper"))))


def test_book_needs_memory_for_ranges_only(hetero):
    book = load_partition_book(hetero)
    tensors = [v for v in vars(book._nodes).values() if isinstance(v, torch.Tensor)]
    tensors += [t for d in (book._nodes.typed_offsets, book._nodes.homo_starts) for t in d.values()]
    assert max(t.numel() for t in tensors) <= 3 * 4 + 1


def test_bad_queries_are_clear_errors(homo, hetero, sbm):
    book = load_partition_book(homo)
    with pytest.raises(InputError, match=f"node id {sbm.num_nodes()} is out of range"):
        book.nid2partid(torch.tensor([0, sbm.num_nodes()]))
    with pytest.raises(InputError, match="must be integer ids"):
        book.nid2partid(torch.tensor([0.0]))
    with pytest.raises(InputError, match="not owned by partition 1"):
        book.nid2localnid(book.partid2nids(0)[:1], 1)
    with pytest.raises(InputError, match="partition id 9 is out of range"):
        book.partid2nids(9)
    hbook = load_partition_book(hetero)
    with pytest.raises(InputError, match="unknown node type 'venue'"):
        hbook.nid2partid(torch.tensor([0]), "venue")


def test_edge_answers_match_brute_force(hetero, mag):
    book = load_partition_book(hetero)
    cfg = json.loads(hetero.read_text())
    m = mag.num_edges()
    part_of, type_of, per_type_of = (torch.full((m,), -1) for _ in range(3))
    for ci, c in enumerate(mag.canonical_etypes):
        ranges = cfg["edge_map"][":".join(c)]
        homo = torch.cat([torch.arange(s, e) for s, e in ranges])  # per-type id -> homogeneous id
        assert torch.equal(book.map_to_homo_eid(torch.arange(mag.num_edges(c)), c), homo)
        assert torch.equal(book.map_to_homo_eid(torch.arange(mag.num_edges(c)), c[1]), homo)
        type_of[homo], per_type_of[homo] = ci, torch.arange(homo.numel())
        first = 0
        for p, (s, e) in enumerate(ranges):
            part_of[s:e] = p
            per_type = torch.arange(first, first + e - s)
            assert torch.equal(book.eid2partid(per_type, c), torch.full((e - s,), p))
            assert torch.equal(book.eid2localeid(per_type.flip(0), p, c), torch.arange(e - s).flip(0))
            assert torch.equal(book.partid2eids(p, c), per_type)
            first += e - s
    assert (part_of >= 0).all()
    ids = torch.randperm(m)
    assert torch.equal(book.eid2partid(ids), part_of[ids])
    etype, per_type = book.map_to_per_etype(ids)
    assert torch.equal(etype, type_of[ids]) and torch.equal(per_type, per_type_of[ids])
    for p in range(3):
        lo, hi = book.edge_range(p)
        assert torch.equal(book.eid2localeid(torch.arange(lo, hi), p), torch.arange(hi - lo))
        part = load_partition(hetero, p)
        assert torch.equal(part_of[part.eids[: part.num_inner_edges].sort().values], torch.full((hi - lo,), p))
    with pytest.raises(InputError, match="not owned by partition 0"):
        book.eid2localeid(torch.tensor([book.edge_range(1)[0]]), 0)
