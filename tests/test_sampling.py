"""Neighbour sampling: validity, no repeats without replacement, uniformity, weights, blocks."""

import pytest
import torch

from distgraph.block import block_from_edges
from distgraph.dataloading import MultiLayerNeighborSampler
from distgraph.errors import InputError
from distgraph.tensor_graph import Graph
from distgraph.nn import SAGEConv
from distgraph.partition import load_partition, partition_graph
from distgraph.sampling import sample_csc, sample_graph, sample_partition
from distgraph.native import kernels
from distgraph.sampling.kernel import Csc, sample_csc_ids, sample_uniform_native


def chi_square(counts: torch.Tensor, expected: torch.Tensor) -> float:
    return float(((counts.double() - expected) ** 2 / expected).sum())


# 99.9th percentile of chi-square with 19 degrees of freedom is 43.8
CHI2_19_999 = 43.8


@pytest.fixture(scope="module")
def star():
    """Node 0 has 20 in-edges (from 1..20); node 21 has 3."""
    src = torch.cat([torch.arange(1, 21), torch.tensor([1, 2, 3])])
    dst = torch.cat([torch.zeros(20, dtype=torch.int64), torch.full((3,), 21)])
    return Graph(src, dst, 22)


def test_sampled_edges_exist_and_never_repeat(sbm, kernel_path):
    gen = torch.Generator().manual_seed(0)
    seeds = torch.randperm(sbm.num_nodes(), generator=gen)[:500]
    e = sample_graph(sbm, seeds, 5, generator=gen)
    assert torch.equal(sbm.src[e.eids], e.src) and torch.equal(sbm.dst[e.eids], e.dst)
    assert torch.isin(e.dst, seeds).all()
    key = e.dst * sbm.num_edges() + e.eids
    assert key.unique().numel() == key.numel()  # no edge twice for a seed
    per_seed = torch.bincount(e.dst, minlength=sbm.num_nodes())[seeds]
    assert torch.equal(per_seed, torch.clamp(sbm.in_degrees()[seeds], max=5))
    assert torch.equal(seeds[e.seed_pos], e.dst)


def test_fanout_minus_one_takes_every_in_edge(sbm):
    seeds = torch.arange(0, 300)
    e = sample_graph(sbm, seeds, -1)
    expected = torch.nonzero(torch.isin(sbm.dst, seeds)).flatten()
    assert torch.equal(e.eids.sort().values, expected)


@pytest.fixture(params=["native", "torch"])
def kernel_path(request, monkeypatch):
    """Uniform sampling without replacement and block relabelling run in C when the kernels
    are built, in torch otherwise: both must behave the same."""
    import distgraph.block as block
    import distgraph.sampling.kernel as kernel

    if request.param == "native":
        if kernel.kernels() is None:
            pytest.skip("the C kernels are not built")
    else:
        for module in (kernel, block):
            monkeypatch.setattr(module, "kernels", lambda: None)
    return request.param


def test_uniform_without_replacement(star, kernel_path):
    gen = torch.Generator().manual_seed(1)
    e = sample_graph(star, torch.zeros(20000, dtype=torch.int64), 5, generator=gen)
    counts = torch.bincount(e.src, minlength=21)[1:]
    assert counts.sum() == 100000
    assert chi_square(counts, torch.full((20,), 5000.0)) < CHI2_19_999
    small = sample_graph(star, torch.tensor([21]), 5)  # fewer edges than the fanout: all of them
    assert sorted(small.src.tolist()) == [1, 2, 3]


def test_uniform_with_replacement(star):
    gen = torch.Generator().manual_seed(2)
    e = sample_graph(star, torch.zeros(10000, dtype=torch.int64), 10, replace=True, generator=gen)
    counts = torch.bincount(e.src, minlength=21)[1:]
    assert counts.sum() == 100000
    assert chi_square(counts, torch.full((20,), 5000.0)) < CHI2_19_999
    assert sample_graph(star, torch.tensor([21]), 5, replace=True).src.numel() == 5


def test_edge_probabilities(star):
    gen = torch.Generator().manual_seed(3)
    prob = torch.ones(star.num_edges())
    prob[:20] = torch.arange(20, dtype=torch.float32)  # edge from node 1 has weight 0
    e = sample_graph(star, torch.zeros(40000, dtype=torch.int64), 1, prob=prob, generator=gen)
    counts = torch.bincount(e.src, minlength=21)[1:]
    assert counts[0] == 0
    expected = 40000 * prob[1:20].double() / prob[:20].sum()
    assert chi_square(counts[1:], expected) < 42.3  # 99.9th pct, 18 dof
    rep = sample_graph(star, torch.zeros(4000, dtype=torch.int64), 10, replace=True, prob=prob, generator=gen)
    counts = torch.bincount(rep.src, minlength=21)[1:]
    assert counts[0] == 0 and chi_square(counts[1:], 40000 * prob[1:20].double() / prob[:20].sum()) < 42.3
    many = sample_graph(star, torch.zeros(100, dtype=torch.int64), 25, prob=prob, generator=gen)
    assert int(torch.bincount(many.dst)[0]) == 100 * 19  # zero-weight edge never taken


def test_partition_sampling_matches_the_graph(tmp_path, sbm):
    orig, orig_e = partition_graph(sbm, "g", 2, tmp_path, return_mapping=True)
    part = load_partition(tmp_path / "g.json", 1)
    lo, hi = part.book.node_range(1)
    e = sample_partition(part, torch.arange(lo, hi), -1)
    assert e.eids.numel() == part.num_inner_edges
    # back in original ids, each sampled edge is a real edge of the graph
    assert torch.equal(sbm.src[orig_e[e.eids]], orig[e.src]) and torch.equal(sbm.dst[orig_e[e.eids]], orig[e.dst])
    with pytest.raises(InputError, match="partition 1 owns nodes"):
        sample_partition(part, torch.tensor([lo - 1]), 3)


def test_blocks_put_destinations_first_and_index_real_edges(sbm):
    sampler = MultiLayerNeighborSampler([4, 3])
    seeds = torch.tensor([5, 17, 99, 5000 % sbm.num_nodes()])
    inputs, outputs, blocks = sampler.sample_blocks(lambda s, f: sample_graph(sbm, s, f), seeds)
    assert torch.equal(outputs, seeds) and len(blocks) == 2
    assert torch.equal(blocks[1].dst_nodes, seeds) and torch.equal(blocks[0].dst_nodes, blocks[1].src_nodes)
    assert torch.equal(inputs, blocks[0].src_nodes)
    for b in blocks:
        assert torch.equal(b.src_nodes[: b.num_dst_nodes()], b.dst_nodes)
        assert b.src_nodes.unique().numel() == b.num_src_nodes()
        src, dst = b.src_nodes[b.edge_index[0]], b.dst_nodes[b.edge_index[1]]
        assert torch.equal(sbm.src[b.eids], src) and torch.equal(sbm.dst[b.eids], dst)
    assert int(blocks[1].in_degrees().max()) <= 3


def test_to_block_with_duplicate_sources(kernel_path):
    """New sources follow the destinations in order of first appearance, as in DGL."""
    b = block_from_edges(torch.tensor([7, 3]), torch.tensor([3, 9, 9, 1]), torch.tensor([0, 0, 1, 1]), torch.arange(4))
    assert b.src_nodes.tolist() == [7, 3, 9, 1]
    assert b.edge_index.tolist() == [[1, 2, 2, 3], [0, 0, 1, 1]]
    with pytest.raises(InputError, match="distinct"):
        block_from_edges(torch.tensor([7, 7]), torch.tensor([3]), torch.tensor([0]), torch.arange(1))


def test_to_block_native_and_torch_agree_on_large_blocks(monkeypatch):
    import distgraph.block as block

    gen = torch.Generator().manual_seed(4)
    dst = torch.randperm(1_000_000, generator=gen)[:5000]
    src = torch.randint(0, 1_000_000, (200_000,), generator=gen)
    row = torch.randint(0, 5000, (200_000,), generator=gen).sort().values
    a = block_from_edges(dst, src, row, torch.arange(200_000))
    monkeypatch.setattr(block, "kernels", lambda: None)
    b = block_from_edges(dst, src, row, torch.arange(200_000))
    assert torch.equal(a.src_nodes, b.src_nodes) and torch.equal(a.edge_index, b.edge_index)
    assert torch.equal(a.src_nodes[a.edge_index[0]], src)
    # rows out of order (one sorted run per machine): both group them alike, stably
    mixed = torch.cat([row[1::2], row[::2]])
    c = block_from_edges(dst, src, mixed, torch.arange(200_000))
    monkeypatch.undo()
    d = block_from_edges(dst, src, mixed, torch.arange(200_000))
    assert torch.equal(c.src_nodes, d.src_nodes) and torch.equal(c.edge_index, d.edge_index)
    assert torch.equal(c.eids, d.eids) and torch.equal(c.src_nodes[c.edge_index[0]], src[c.eids])
    assert torch.equal(c.edge_index[1], row)
    with pytest.raises(IndexError):
        block_from_edges(dst, src[:3], torch.tensor([2, 1, 5000]), torch.arange(3))
    # ids past the C table's 40-bit tags are relabelled by the torch path, to the same block
    huge = (1 << 40) + torch.arange(6)
    e = block_from_edges(huge[:2], huge[[5, 0, 3, 5]], torch.tensor([0, 0, 1, 1]), torch.arange(4))
    assert e.src_nodes.tolist() == huge[[0, 1, 5, 3]].tolist()
    assert e.edge_index.tolist() == [[2, 0, 3, 2], [0, 0, 1, 1]]


def test_sage_conv_mean_aggregation():
    b = block_from_edges(torch.tensor([0, 1]), torch.tensor([2, 3, 2]), torch.tensor([0, 0, 1]), torch.arange(3))
    conv = SAGEConv(2, 2, bias=False)
    with torch.no_grad():
        conv.fc_self.weight.copy_(torch.eye(2))
        conv.fc_neigh.weight.copy_(2 * torch.eye(2))
    h = torch.tensor([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0], [4.0, 0.0]])  # rows: 0, 1, 2, 3
    out = conv(b, h)
    # node 0: self (1,0) + 2*mean((2,2),(4,0)) = (1,0)+(6,2); node 1: (0,1) + 2*(2,2)
    assert out.tolist() == [[7.0, 2.0], [4.0, 5.0]]


def test_torch_geometric_sage_conv_consumes_the_same_block():
    pyg = pytest.importorskip("torch_geometric.nn")
    b = block_from_edges(torch.tensor([0, 1]), torch.tensor([2, 3, 2]), torch.tensor([0, 0, 1]), torch.arange(3))
    h = torch.randn(4, 3)
    conv = pyg.SAGEConv(3, 2)
    out = conv((h, h[: b.num_dst_nodes()]), b.edge_index, size=b.size())
    ours = SAGEConv(3, 2)
    with torch.no_grad():
        ours.fc_neigh.weight.copy_(conv.lin_l.weight)
        ours.bias.copy_(conv.lin_l.bias)
        ours.fc_self.weight.copy_(conv.lin_r.weight)
    assert torch.allclose(out, ours(b, h), atol=1e-6)


def test_kernel_on_empty_and_isolated_seeds():
    indptr = torch.tensor([0, 0, 2])
    seg, slots = sample_csc(indptr, torch.tensor([0, 0]), 3)
    assert seg.numel() == 0 and slots.numel() == 0
    seg, slots = sample_csc(indptr, torch.tensor([0, 1]), 1, replace=True)
    assert seg.tolist() == [1] and slots.item() in (0, 1)


@pytest.mark.parametrize("force_even", [True, False])
def test_node_split_shares_are_disjoint_cover_the_set_and_stay_local(tmp_path, sbm, force_even):
    from distgraph.dataloading.split import node_split
    from distgraph.partition import load_partition_book, split_categories

    orig, _ = partition_graph(sbm, "g", 2, tmp_path, balance_ntypes=split_categories(sbm), return_mapping=True)
    book = load_partition_book(tmp_path / "g.json")
    mask = sbm.ndata["train_mask"][orig]  # mask in new ids
    shares = [node_split(mask, book, rank=r, world_size=4, force_even=force_even) for r in range(4)]
    allids = torch.cat(shares)
    assert torch.equal(allids.sort().values, torch.nonzero(mask).flatten())
    sizes = [s.numel() for s in shares]
    if force_even:
        assert max(sizes) - min(sizes) <= 1
    owner = book.nid2partid(torch.nonzero(mask).flatten())
    for machine in range(2):  # trainers 2m and 2m+1 run on machine m, which owns partition m
        mine = shares[2 * machine: 2 * machine + 2]
        remote = sum(int((book.nid2partid(s) != machine).sum()) for s in mine)
        # taken from the machine's own nodes first: only what it lacks for its shares is remote
        # (METIS balances the train nodes within its 3 % tolerance, not exactly)
        assert remote == max(0, sum(s.numel() for s in mine) - int((owner == machine).sum()))
        if not force_even:
            assert remote == 0


def test_edge_split_and_bad_masks(tmp_path, sbm):
    from distgraph.dataloading.split import edge_split, node_split
    from distgraph.partition import load_partition_book

    partition_graph(sbm, "g", 2, tmp_path)
    book = load_partition_book(tmp_path / "g.json")
    shares = [edge_split(torch.arange(0, sbm.num_edges(), 3), book, rank=r, world_size=2) for r in range(2)]
    assert torch.equal(torch.cat(shares), torch.arange(0, sbm.num_edges(), 3))
    with pytest.raises(InputError, match="mask of 5 values but there are"):
        node_split(torch.ones(5, dtype=torch.bool), book, rank=0, world_size=2)
    with pytest.raises(InputError, match="float32 mask of 5 values"):
        node_split(torch.ones(5), book, rank=0, world_size=2)
    with pytest.raises(InputError, match="3 trainers cannot be spread evenly over 2 machines"):
        node_split(torch.arange(10), book, rank=0, world_size=3)


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int32, torch.int64, torch.float16, torch.float32,
                                   torch.float64])
def test_masks_of_any_dtype_select_their_nonzeros_as_bool_masks_do(tmp_path, sbm, dtype):
    from distgraph.dataloading.split import edge_split, node_split
    from distgraph.partition import load_partition_book

    partition_graph(sbm, "g", 2, tmp_path)
    book = load_partition_book(tmp_path / "g.json")
    mask = sbm.ndata["train_mask"]
    for r in range(4):  # every trainer's share is the bool mask's share, with or without force_even
        for even in (True, False):
            assert torch.equal(node_split(mask.to(dtype), book, rank=r, world_size=4, force_even=even),
                               node_split(mask, book, rank=r, world_size=4, force_even=even))
    shares = [node_split(mask.to(dtype), book, rank=r, world_size=4) for r in range(4)]
    assert sum(s.numel() for s in shares) == int(mask.sum()) > 4  # not read as the ids 0 and 1
    emask = torch.arange(sbm.num_edges()) % 5 == 0
    assert torch.equal(edge_split(emask.to(dtype), book, rank=1, world_size=2),
                       edge_split(emask, book, rank=1, world_size=2))
    if not dtype.is_floating_point:  # integer tensors that are not 0/1 masks stay ids
        ids = torch.tensor([5, 1, 9], dtype=dtype)
        assert torch.cat([node_split(ids, book, rank=r, world_size=2) for r in range(2)]).tolist() == [1, 5, 9]
        every = torch.arange(sbm.num_nodes(), dtype=dtype if dtype.itemsize > 1 else torch.int64)
        assert sum(node_split(every, book, rank=r, world_size=2).numel() for r in range(2)) == sbm.num_nodes()


def test_the_loaders_read_masks_of_any_dtype_as_the_ids_they_select(sbm):
    from distgraph.dataloading import DistNodeDataLoader

    sampler = MultiLayerNeighborSampler([2])
    mask = sbm.ndata["train_mask"]
    for m in (mask, mask.to(torch.int8), mask.to(torch.float32)):
        seeds = torch.cat([out for _, out, _ in DistNodeDataLoader(sbm, m, sampler, batch_size=64)])
        assert torch.equal(seeds, torch.nonzero(mask).flatten())
    with pytest.raises(InputError, match="float32 mask of 3 values"):
        DistNodeDataLoader(sbm, torch.ones(3), sampler)


def test_repeated_seeds_are_sampled_once_in_first_occurrence_order(sbm):
    sampler = MultiLayerNeighborSampler([3, 3])
    seeds = torch.tensor([7, 1, 7, 4, 1])
    inputs, outputs, blocks = sampler.sample_blocks(lambda s, f: sample_graph(sbm, s, f), seeds)
    assert outputs.tolist() == [7, 1, 4] and torch.equal(blocks[-1].dst_nodes, outputs)


def test_first_occurrences_keep_each_id_once_where_it_first_came(kernel_path):
    """The C hash table and the sort agree, on ids the table tags and on ids past them."""
    from distgraph.block import first_occurrences

    g = torch.Generator().manual_seed(3)
    for ids in (torch.randint(0, 500, (2000,), generator=g), torch.randperm(300, generator=g),
                torch.tensor([1 << 50, 5, 1 << 50, 7, 5]), torch.zeros(0, dtype=torch.int64)):
        want = [] if not ids.numel() else list(dict.fromkeys(ids.tolist()))
        assert first_occurrences(ids).tolist() == want


def test_weighted_draws_with_replacement_never_take_zero_weight_edges_whatever_the_spread():
    indptr = torch.tensor([0, 1, 3])
    _, slots = sample_csc(indptr, torch.tensor([0, 1]), 10000, replace=True,
                          prob=torch.tensor([1e12, 1e-3, 0.0]))
    assert int((slots == 2).sum()) == 0 and int((slots == 1).sum()) == 10000


def test_native_sampling_follows_the_generator_and_refuses_bad_rows(sbm, kernel_path):
    seeds = torch.randperm(sbm.num_nodes(), generator=torch.Generator().manual_seed(3))[:400]
    runs = [sample_graph(sbm, seeds, 4, generator=torch.Generator().manual_seed(s)) for s in (7, 7, 8)]
    assert torch.equal(runs[0].eids, runs[1].eids) and not torch.equal(runs[0].eids, runs[2].eids)
    indptr = torch.tensor([0, 5, 9])
    with pytest.raises((IndexError, RuntimeError)):
        sample_csc(indptr, torch.tensor([0, 2]), 3)  # row 2 does not exist: refused, never read


def test_fused_ids_equal_slots_mapped_afterwards(sbm, kernel_path):
    """Sampling straight to ids (C maps each slot as it is drawn) gives what sampling slots
    and mapping them afterwards gives, with the same draws."""
    indptr, other, eids = sbm.csc()
    csc = Csc(indptr, other, nid_map=torch.arange(sbm.num_nodes()) * 3 + 1, eid_map=eids)
    seeds = torch.randperm(sbm.num_nodes(), generator=torch.Generator().manual_seed(5))[:300]
    seg, src, eid = sample_csc_ids(csc, seeds, 4, generator=torch.Generator().manual_seed(9))
    seg2, slots = sample_csc(indptr, seeds, 4, generator=torch.Generator().manual_seed(9))
    src2, eid2 = csc.ids(slots)
    assert torch.equal(seg, seg2) and torch.equal(src, src2) and torch.equal(eid, eid2)
    assert torch.equal(src, other[slots] * 3 + 1)
    # local ids below map_from (a partition's owned range) are added to, the rest mapped;
    # seeds are rows + row_add
    half = sbm.num_nodes() // 2
    csc = Csc(indptr, other, nid_map=torch.arange(sbm.num_nodes()) * 3 + 1, nid_add=100, map_from=half, eid_add=7,
              row_add=1000)
    seg, src, eid = sample_csc_ids(csc, seeds + 1000, 4, generator=torch.Generator().manual_seed(9))
    local = other[slots]
    assert torch.equal(src, torch.where(local < half, local + 100, local * 3 + 1)) and torch.equal(eid, slots + 7)
    assert torch.equal(torch.stack(csc.ids(slots)), torch.stack([src, eid]))


def test_several_cscs_in_one_pass_equal_each_sampled_alone(sbm):
    """Seeds of several CSCs interleaved (a host's partitions) come out grouped by seed in seed
    order, each CSC's share exactly what sampling it alone with its generator gives; seeds of
    a CSC that is not there (None) are left out."""
    if kernels() is None:
        pytest.skip("the C kernels are not built")
    indptr, other, eids = sbm.csc()
    n = sbm.num_nodes()
    cscs = [Csc(indptr, other, eid_map=eids), None, Csc(indptr, other, nid_add=n, eid_map=eids, row_add=2 * n)]
    gen = torch.Generator().manual_seed(1)
    owner = torch.randint(0, 3, (500,), generator=gen)
    seeds = torch.randint(0, n, (500,), generator=gen) + torch.where(owner == 2, 2 * n, 0)
    gens = [torch.Generator().manual_seed(s) for s in (4, 5, 6)]
    seg, src, eid = sample_uniform_native(cscs, seeds, owner, 5, gens)
    assert bool((seg[1:] >= seg[:-1]).all()) and not bool(torch.isin(seg, torch.nonzero(owner == 1).flatten()).any())
    for c in (0, 2):
        pos = torch.nonzero(owner == c).flatten()
        alone = sample_csc_ids(cscs[c], seeds[pos], 5, generator=torch.Generator().manual_seed(4 + c))
        mine = torch.isin(seg, pos)
        assert torch.equal(pos[alone[0]], seg[mine]) and torch.equal(alone[1], src[mine])
        assert torch.equal(alone[2], eid[mine])
    with pytest.raises(IndexError):  # a seed that is not a row of its CSC is refused, never read
        sample_uniform_native(cscs, seeds[:1] * 0 + 3 * n, owner[:1] * 0 + 2, 5, gens)


def test_a_csc_pointing_outside_itself_is_refused_not_read(kernel_path):
    indptr = torch.tensor([0, 2, 4])
    bad_local = Csc(indptr, torch.tensor([0, 1, 7, 1]), nid_map=torch.tensor([10, 11]))  # local id 7 of 2
    with pytest.raises(IndexError):
        sample_csc_ids(bad_local, torch.tensor([0, 1]), 2, generator=torch.Generator().manual_seed(0))
    short = Csc(indptr, torch.tensor([0, 1, 1]))  # indptr says 4 slots, indices has 3
    with pytest.raises((IndexError, RuntimeError)):
        sample_csc_ids(short, torch.tensor([1]), 2, generator=torch.Generator().manual_seed(0))


def test_to_block_groups_interleaved_edges_by_destination_stably(kernel_path):
    """Edges of several machines arrive as one run each; the block groups them by destination
    row, keeping their order within a destination."""
    rows = torch.tensor([0, 2, 1, 0, 2, 1, 0])
    b = block_from_edges(torch.tensor([10, 11, 12]), torch.tensor([20, 21, 22, 23, 24, 25, 26]), rows, torch.arange(7))
    assert b.edge_index[1].tolist() == [0, 0, 0, 1, 1, 2, 2]
    assert b.eids.tolist() == [0, 3, 6, 2, 5, 1, 4]
    assert b.src_nodes[b.edge_index[0]].tolist() == [20, 23, 26, 22, 25, 21, 24]


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize("typed", [False, True])
def test_edges_of_several_parts_merge_into_seed_order(native, typed, monkeypatch):
    """Each part answers for its own seeds, edges seed after seed (with each seed's count, or each
    edge's position): merged, every seed's edges come in its position's order, each part's run
    kept as it came (C, and the torch path without it)."""
    from distgraph.sampling import local

    if not native:
        monkeypatch.setattr(local, "kernels", lambda: None)
    g = torch.Generator().manual_seed(5)
    n = 500
    seeds = torch.randperm(10_000, generator=g)[:n]
    owner = torch.randint(0, 3, (n,), generator=g)
    counts = torch.randint(0, 6, (n,), generator=g)
    runs, want = [], {}
    for k in range(3):
        pos = torch.nonzero(owner == k).flatten()
        c = counts[pos]
        total = int(c.sum())
        src, eids = torch.randint(0, 10_000, (total,), generator=g), torch.randint(0, 99_999, (total,), generator=g)
        etype = torch.randint(0, 4, (total,), generator=g) if typed else None
        # part 0 as a part sampled here gives it (each edge's position), the others as a server answers
        runs.append(local.SeedRuns(pos.repeat_interleave(c), None, src, eids, etype) if k == 0
                    else local.SeedRuns(pos, c, src, eids, etype))
        at = 0
        for p, m in zip(pos.tolist(), c.tolist()):
            want[p] = [(int(src[at + j]), int(eids[at + j]), int(etype[at + j]) if typed else None) for j in range(m)]
            at += m
    e = local.SampledEdges.merged(seeds, runs)
    got = list(zip(e.src.tolist(), e.eids.tolist(), e.etype.tolist() if typed else [None] * e.src.numel()))
    assert got == [edge for p in range(n) for edge in want[p]]
    assert e.seed_pos.tolist() == torch.arange(n).repeat_interleave(counts).tolist()
    assert torch.equal(e.dst, seeds.repeat_interleave(counts))


@pytest.mark.parametrize("native", [True, False])
def test_a_part_whose_edges_do_not_fit_its_seeds_is_named_not_merged(native, monkeypatch):
    """A negative count, counts that do not add up to the edges, a seed out of range, out of
    order or also another part's, arrays of different lengths: the merge names the part."""
    from distgraph.sampling import local

    if not native:
        monkeypatch.setattr(local, "kernels", lambda: None)
    seeds = torch.arange(100, 106)
    mine = local.SeedRuns(torch.tensor([0, 0, 2]), None, torch.tensor([1, 2, 3]), torch.tensor([7, 8, 9]))
    e = torch.arange(4)
    good = local.SampledEdges.merged(seeds, [mine, local.SeedRuns(torch.tensor([1, 5]), torch.tensor([3, 1]), e, e)])
    assert good.seed_pos.tolist() == [0, 0, 1, 1, 1, 2, 5] and good.src.tolist() == [1, 2, 0, 1, 2, 3, 3]
    bad = [(torch.tensor([1, 5]), torch.tensor([5, -1]), e, e),  # a negative count
           (torch.tensor([1, 5]), torch.tensor([2, 1]), e, e),  # 3 edges counted, 4 sent
           (torch.tensor([1, 6]), torch.tensor([3, 1]), e, e),  # position 6 of 6 seeds
           (torch.tensor([5, 1]), torch.tensor([3, 1]), e, e),  # out of order
           (torch.tensor([2, 5]), torch.tensor([3, 1]), e, e),  # seed 2 is part 0's
           (torch.tensor([1, 5]), torch.tensor([3, 1]), e, e[:3]),  # fewer edge ids than sources
           (torch.tensor([1, 5]), torch.tensor([4]), e, e),  # a count short
           (torch.tensor([1, 3, 4, 5]), torch.tensor([2 ** 62] * 3 + [2 ** 62 + 4]), e, e)]  # 4 after a wrap
    for pos, counts, src, eids in bad:
        with pytest.raises(local.MalformedRuns) as got:
            local.SampledEdges.merged(seeds, [mine, local.SeedRuns(pos, counts, src, eids)])
        assert got.value.part == 1, (pos, counts)
    with pytest.raises(local.MalformedRuns) as got:  # a part's own edges out of seed order
        local.SampledEdges.merged(seeds, [local.SeedRuns(torch.tensor([2, 0]), None, e[:2], e[:2]),
                                          local.SeedRuns(torch.tensor([1]), torch.tensor([4]), e, e)])
    assert got.value.part == 0


def test_torch_draws_come_seed_after_seed(kernel_path):
    """Seeds with fewer in-edges than the fanout and seeds with more, interleaved: every path's
    edges come grouped by seed in seed order, as a merge of several parts' answers needs."""
    indptr = torch.tensor([0, 2, 12, 13, 30, 30, 31])
    for fanout in (3, 300):  # (300: past the C kernel's draws, the torch path either way)
        seg, slots = sample_csc(indptr, torch.tensor([0, 1, 2, 3, 4, 5, 1]), fanout,
                                generator=torch.Generator().manual_seed(0))
        assert bool((seg[1:] >= seg[:-1]).all()) and torch.equal(torch.bincount(seg, minlength=7),
                                                                  torch.tensor([2, 3, 1, 3, 0, 1, 3]).clamp(max=fanout)
                                                                  if fanout == 3 else torch.tensor([2, 10, 1, 17, 0, 1, 10]))


def test_a_samplers_free_row_serves_one_block(sbm):
    """A block built from sampled edges takes their free row as its edge index; a second block of
    the same edges (other destinations) gets its own, leaving the first block as it was."""
    if kernels() is None:
        pytest.skip("the C kernels are not built")
    e = sample_graph(sbm, torch.arange(50), 3, generator=torch.Generator().manual_seed(0))
    assert e.room is not None
    sampler = MultiLayerNeighborSampler([3])
    _, _, (first,) = sampler.sample_blocks(lambda s, f: e, torch.arange(50))
    kept = first.edge_index.clone()
    _, _, (second,) = sampler.sample_blocks(lambda s, f: e, torch.arange(49, -1, -1))
    assert torch.equal(first.edge_index, kept) and not torch.equal(second.edge_index, kept)
