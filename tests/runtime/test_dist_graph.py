"""DistGraph on two loopback machines (this process is machine 0's trainer) and standalone:
data, degrees and edges by id wherever they live; sampling across machines; loaders."""

import numpy as np
import pytest
import torch

from distgraph.block import block_from_edges
from distgraph.dataloading import DistEdgeDataLoader, DistNodeDataLoader, MultiLayerNeighborSampler, negative_sampler
from distgraph.dist_graph import DistGraph
from distgraph.errors import DistGraphError
from distgraph.rpc.transport import Request
from distgraph.sampling import sample_neighbors

from .conftest import Cluster, as_trainer


def mapping(part_config):
    return torch.from_numpy(np.load(part_config.parent / "mapping" / "node._N.npy")), \
        torch.from_numpy(np.load(part_config.parent / "mapping" / "edge._N:_E:_N.npy"))


@pytest.fixture(scope="module")
def cluster(parts, tmp_path_factory):
    c = Cluster(parts[2], tmp_path_factory.mktemp("ip") / "ip_config.txt", [1, 1])
    yield c
    assert all(code == 0 for code in c.stop().values())


@pytest.fixture(scope="module")
def g(cluster):
    with as_trainer(cluster):
        yield DistGraph("g")


def test_data_degrees_and_edges_in_original_ids(g, graph, parts):
    orig, orig_e = mapping(parts[2])
    assert g.num_nodes() == graph.num_nodes() and g.num_edges() == graph.num_edges()
    ids = torch.tensor([0, g.num_nodes() - 1, 5, 0])  # both machines, a duplicate
    assert torch.equal(g.ndata["feat"][ids], graph.ndata["feat"][orig[ids]])
    assert torch.equal(g.in_degrees(), graph.in_degrees()[orig])
    assert torch.equal(g.out_degrees(ids), graph.out_degrees()[orig[ids]])
    assert g.in_degrees(ids).dtype == torch.int64  # published as int32, half the shared memory
    assert g._structure["_N#in_degree"].dtype == torch.int32
    eids = torch.tensor([0, g.num_edges() - 1, 17])
    src, dst = g.find_edges(eids)
    assert torch.equal(orig[src], graph.src[orig_e[eids]]) and torch.equal(orig[dst], graph.dst[orig_e[eids]])
    assert torch.equal(g.orig_nids(), orig)
    book = g.get_partition_book()
    assert torch.equal(g.get_node_partition_policy().to_partid(ids), book.nid2partid(ids))
    assert torch.equal(g.get_edge_partition_policy().to_partid(eids), book.eid2partid(eids))


def test_sampling_spans_machines_and_returns_real_edges(g, graph, parts):
    orig, orig_e = mapping(parts[2])
    book = g.get_partition_book()
    seeds = torch.cat([book.partid2nids(0)[:50], book.partid2nids(1)[:50]])
    e = sample_neighbors(g, seeds, 4)
    assert torch.equal(graph.src[orig_e[e.eids]], orig[e.src]) and torch.equal(graph.dst[orig_e[e.eids]], orig[e.dst])
    per_seed = torch.bincount(e.dst, minlength=g.num_nodes())[seeds]
    assert torch.equal(per_seed, torch.clamp(g.in_degrees(seeds), max=4))
    key = e.dst * g.num_edges() + e.eids
    assert key.unique().numel() == key.numel()
    mixed = seeds[torch.randperm(100, generator=torch.Generator().manual_seed(0))]  # machines interleaved
    e = sample_neighbors(g, mixed, 4)
    assert torch.equal(mixed[e.seed_pos], e.dst)  # each edge knows its seed's position, whichever machine drew it
    assert sample_neighbors(g, seeds, -1).eids.numel() == int(g.in_degrees(seeds).sum())
    assert sample_neighbors(g, seeds, 3, replace=True).eids.numel() == 3 * int((g.in_degrees(seeds) > 0).sum())


def test_a_reply_whose_edges_do_not_fit_its_seeds_names_the_machine(g, graph, parts, monkeypatch):
    """Machine 1's share drawn by its server (as from another host) merges into real edges of
    their seeds; a reply whose counts do not add up to its edges is refused, naming machine 1."""
    orig, orig_e = mapping(parts[2])
    book, client = g.get_partition_book(), g._ctx.client
    seeds = torch.cat([book.partid2nids(0)[:40], book.partid2nids(1)[:40]])
    seeds = seeds[torch.randperm(80, generator=torch.Generator().manual_seed(1))]
    mine = g._in_process([0])
    monkeypatch.setattr(g, "_in_process", lambda machines: mine if 0 in machines else {})
    e = sample_neighbors(g, seeds, 4)
    assert torch.equal(graph.src[orig_e[e.eids]], orig[e.src]) and torch.equal(graph.dst[orig_e[e.eids]], orig[e.dst])
    assert torch.equal(seeds[e.seed_pos], e.dst) and bool((book.nid2partid(e.dst, None) == 1).any())
    honest = client.overlap

    def lying(requests, local):
        here, replies = honest(requests, local)
        for reply in replies:
            reply.arrays[2] = reply.arrays[2] + 1  # each seed claims an edge more than were sent
        return here, replies

    monkeypatch.setattr(client, "overlap", lying)
    with pytest.raises(DistGraphError, match="machine 1 answered a sampling request with malformed arrays: its edges"):
        sample_neighbors(g, seeds, 4)


def test_loaders_on_a_dist_graph(g):
    train = torch.nonzero(g.ndata["train_mask"][torch.arange(g.num_nodes())]).flatten()
    loader = DistNodeDataLoader(g, train, MultiLayerNeighborSampler([5, 5]), batch_size=100, shuffle=True)
    seen = []
    for inputs, outputs, blocks in loader:
        assert torch.equal(blocks[-1].dst_nodes, outputs) and torch.equal(blocks[0].src_nodes, inputs)
        assert g.ndata["feat"][inputs].shape == (inputs.numel(), 16)
        seen.append(outputs)
    assert torch.equal(torch.cat(seen).sort().values, train)
    edges = DistEdgeDataLoader(g, torch.arange(0, g.num_edges(), 97), MultiLayerNeighborSampler([-1]), batch_size=64,
                               exclude="self", negative_sampler=negative_sampler.Uniform(2))
    for inputs, pos, neg, blocks in edges:
        out = blocks[-1].dst_nodes
        src, dst = g.find_edges(pos.eids)
        assert torch.equal(out[pos.edge_index[0]], src) and torch.equal(out[pos.edge_index[1]], dst)
        assert not torch.isin(blocks[0].eids, pos.eids).any()
        assert neg.num_edges() == 2 * pos.num_edges()


def test_machines_of_this_host_are_sampled_in_process_as_their_servers_would(g, monkeypatch):
    """Machine 1 shares this host: its seeds are sampled here from its partition files, with
    no request, and give exactly what its server gives for the same generator (in seed order
    rather than machine by machine: the same block)."""
    book = g.get_partition_book()
    seeds = torch.cat([book.partid2nids(1)[:60], book.partid2nids(0)[:40], book.partid2nids(1)[60:80]])
    assert list(g._host_partitions) == [1]
    client = g._ctx.client
    sent, overlap = [], client.overlap
    monkeypatch.setattr(client, "overlap", lambda reqs, local: (sent.append(len(reqs)), overlap(reqs, local))[1])
    for fanout, replace in ((4, False), (-1, False), (3, True)):
        monkeypatch.delitem(g.__dict__, "_host_partitions", raising=False)
        here = sample_neighbors(g, seeds, fanout, replace=replace, generator=torch.Generator().manual_seed(3))
        monkeypatch.setitem(g.__dict__, "_host_partitions", {})  # as if machine 1 were another host
        served = sample_neighbors(g, seeds, fanout, replace=replace, generator=torch.Generator().manual_seed(3))
        a, b = (block_from_edges(seeds, e.src, e.seed_pos, e.eids) for e in (here, served))
        for k in ("src_nodes", "edge_index", "eids"):
            assert torch.equal(getattr(a, k), getattr(b, k)), k
        if fanout >= 0 and not replace:  # uniform draws: one pass of C over both partitions, in seed order
            assert bool((here.seed_pos[1:] >= here.seed_pos[:-1]).all())
        assert here.eids.numel() > seeds.numel()
    assert sent == [0, 1] * 3


def test_find_edges_through_a_server_equals_in_process_and_the_input_graph(g, graph, parts, monkeypatch):
    """Edges owned by machine 1 are read off its partition in this process (same host) or by
    its server (as from another host): the same endpoints, those of the input graph."""
    orig, orig_e = mapping(parts[2])
    eids = torch.cat([torch.arange(0, g.num_edges(), 13), torch.tensor([g.num_edges() - 1, 0, 5])])
    client = g._ctx.client
    sent, overlap = [], client.overlap
    monkeypatch.setattr(client, "overlap", lambda reqs, local: (sent.append(len(reqs)), overlap(reqs, local))[1])
    here = g.find_edges(eids)
    monkeypatch.setitem(g.__dict__, "_host_partitions", {})  # as if machine 1 were another host
    served = g.find_edges(eids)
    assert sent == [0, 1]
    for a, b in zip(here, served):
        assert torch.equal(a, b)
    src, dst = served
    assert torch.equal(orig[src], graph.src[orig_e[eids]]) and torch.equal(orig[dst], graph.dst[orig_e[eids]])
    assert g.find_edges(torch.zeros(0, dtype=torch.int64))[0].numel() == 0
    with pytest.raises(DistGraphError, match="out of range"):
        g.find_edges(torch.tensor([g.num_edges()]))


def test_malformed_find_edges_requests_get_errors_and_the_server_keeps_serving(g):
    client = g._ctx.client
    book = g.get_partition_book()
    theirs, mine = book.partid2eids(1)[:3], book.partid2eids(0)[:2]
    for arrays, message in (([theirs.int()], "must be a 1-D int64 array"), ([mine], "owns edges"),
                            ([], "takes 1 array")):
        with pytest.raises(DistGraphError, match=message):
            client.channel.call([Request(client.leaders[1], {"op": "find_edges"}, arrays)])
    assert client.channel.call([Request(client.leaders[1], {"op": "find_edges"}, [theirs])])[0].arrays[0].numel() == 3


def test_malformed_sample_requests_get_errors_and_the_server_keeps_serving(g):
    client = g._ctx.client
    book = g.get_partition_book()
    remote = book.partid2nids(1)[:3]
    bad = [
        ({"op": "sample", "fanout": "ten", "replace": False}, [remote], "field 'fanout' has the wrong type"),
        ({"op": "sample", "fanout": 2, "replace": False}, [remote.float()], "must be a 1-D int64 array"),
        ({"op": "sample", "fanout": 2, "replace": False}, [book.partid2nids(0)[:2]], "owns nodes"),
        ({"op": "sample", "fanout": 2, "replace": False, "prob": "nope"}, [remote], "field 'prob' has the wrong type"),
        ({"op": "sample", "fanout": 2, "replace": False, "prob": ["nope"]}, [remote], "'nope' of edge type .* not exist"),
        ({"op": "sample", "fanout": 2, "replace": False, "prob": [None, "w"]}, [remote], "one tensor .* for each"),
        ({"op": "sample", "fanout": 2, "replace": False}, [], "takes 1 array"),
    ]
    for header, arrays, message in bad:
        with pytest.raises(DistGraphError, match=message):
            client.channel.call([Request(client.leaders[1], header, arrays)])
    assert sample_neighbors(g, remote, 2).src.numel() > 0
