"""Edge data assigned to a DistGraph at run time (a `DistTensor` put into `g.edata[...]` or
`g.edges[etype].data[...]`) weights and masks sampling, read from the store as DGL reads it:
standalone, on two loopback machines (machine 1's seeds sampled in this process from its
partition, or by its server) and in sampler processes; `sample_etype_neighbors` is
`sample_neighbors` with DGL's typed signature; typed blocks' `edges[etype].data` hold the
prefetched edge data."""

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import distgraph as dgl
from distgraph.errors import DistGraphError, InputError

from .conftest import Cluster, as_trainer

SCRIPTS = Path(__file__).parent / "scripts"


def weights_and_mask(g, etype=None) -> tuple[torch.Tensor, torch.Tensor]:
    """Give `g` run-time edge data of type `etype`: weights "w" (zero on every third edge) and a
    bool mask "keep" (odd edges), as DistTensors of the edge type's policy; returns both in full."""
    n = g.num_edges(etype)
    eids = torch.arange(n)
    w, keep = torch.where(eids % 3 == 0, 0.0, 1.0 + eids % 5), eids % 2 == 1
    policy = g.get_edge_partition_policy(etype)
    key = "" if etype is None else f"-{g.to_canonical_etype(etype)[1]}"
    for name, values in (("w", w), ("keep", keep)):
        t = dgl.distributed.DistTensor((n,), values.dtype, f"{name}{key}", part_policy=policy)
        t[eids] = values
        if etype is None:
            g.edata[name] = t
        else:
            g.edges[etype].data[name] = t
    return w, keep


def check_homogeneous(g) -> None:
    """Draws by weight and by mask never take a zero-weight or unmasked edge, and each seed
    gets min(fanout, its eligible in-edges), on both machines' seeds when there are two."""
    w, keep = weights_and_mask(g)
    book = g.get_partition_book()
    seeds = torch.cat([book.partid2nids(p)[:150] for p in range(book.num_partitions())])
    gen = torch.Generator().manual_seed(0)
    for name, allowed in (("w", w > 0), ("keep", keep)):
        e = dgl.sample_neighbors(g, seeds, 3, prob=name, generator=gen)
        assert bool(allowed[e.eids].all()) and e.eids.numel() > seeds.numel()
        src, dst = g.find_edges(torch.nonzero(allowed).flatten())
        eligible = torch.bincount(dst, minlength=g.num_nodes())[seeds]
        assert torch.equal(torch.bincount(e.dst, minlength=g.num_nodes())[seeds], torch.clamp(eligible, max=3))
        e = dgl.sample_neighbors(g, seeds, 3, prob=name, replace=True, generator=gen)
        assert bool(allowed[e.eids].all()) and e.eids.numel() == 3 * int((eligible > 0).sum())
    sampler = dgl.dataloading.NeighborSampler([4, 4], mask="keep", prefetch_edge_feats=["w"])
    loader = dgl.dataloading.DistNodeDataLoader(g, seeds, sampler, batch_size=100)
    for _, _, blocks in loader:
        for b in blocks:
            assert bool(keep[b.eids].all()) and torch.equal(b.edata["w"], w[b.eids])


def test_run_time_weights_and_masks_standalone(parts, runtime):
    runtime.initialize(part_config=str(parts[1]))
    check_homogeneous(dgl.distributed.DistGraph("g", part_config=str(parts[1])))


@pytest.fixture(scope="module")
def cluster(parts, tmp_path_factory):
    # servers end after every trainer's goodbye: room for this module's three trainer sessions
    c = Cluster(parts[2], tmp_path_factory.mktemp("ip") / "ip_config.txt", [1, 1], num_trainers=2)
    yield c
    assert all(code == 0 for code in c.stop().values())


@pytest.mark.parametrize("host_shm", [True, False], ids=["host", "wire"])
def test_run_time_weights_and_masks_on_two_machines(cluster, host_shm):
    with as_trainer(cluster, host_shm=host_shm):
        g = dgl.distributed.DistGraph("g")
        assert bool(g._host_partitions) == host_shm  # machine 1's seeds: sampled here, or by its server
        check_homogeneous(g)


def test_wrong_weights_are_one_clear_error(cluster):
    with as_trainer(cluster, host_shm=False):
        g = dgl.distributed.DistGraph("g")
        with pytest.raises(InputError, match="no edge type has edge data 'nope'"):
            dgl.sample_neighbors(g, torch.arange(10), 2, prob="nope")
        g.edata["plain"] = torch.ones(g.num_edges())
        with pytest.raises(InputError, match="is a Tensor; sampling weights are read from the servers' store"):
            dgl.sample_neighbors(g, torch.arange(10), 2, prob="plain")
        g.edata["wide"] = dgl.distributed.DistTensor((g.num_edges(), 2), torch.float32, "wide",
                                                     part_policy=g.get_edge_partition_policy())
        theirs = g.get_partition_book().partid2nids(1)[:5]  # refused by machine 1's server too
        for seeds in (torch.arange(5), theirs):
            with pytest.raises((InputError, DistGraphError), match="must hold one value per edge"):
                dgl.sample_neighbors(g, seeds, 2, prob="wide")


def test_sampler_processes_sample_with_the_trainers_run_time_data(parts, tmp_path, launches):
    job = launches(tmp_path, parts[2], [1, 1], f"{sys.executable} {SCRIPTS / 'run_time_weights.py'} {tmp_path}",
                   num_trainers=1, num_samplers=1)
    assert job.wait(300) == 0, job.output[-4000:]
    for name, allowed in (("prob", lambda e: e % 3 != 0), ("mask", lambda e: e % 2 == 1)):
        drawn = np.concatenate([np.load(tmp_path / f"{name}_{r}.npy") for r in range(2)])
        assert drawn.size > 1000 and bool(allowed(drawn).all()), name
    assert job.left_behind() == ([], [])


def test_typed_run_time_weights_sample_etype_neighbors_and_block_edge_data(mag_parts, runtime):
    """On a heterograph: weights on one edge type only (the others draw uniformly, as in DGL);
    `sample_etype_neighbors` with {type: ids}, homogeneous ids or DGL 2.1.0's positional order
    equals `sample_neighbors`; blocks give `edges[etype].data` with the prefetched data."""
    runtime.initialize(part_config=str(mag_parts[1]))
    g = dgl.distributed.DistGraph("mag", part_config=str(mag_parts[1]))
    cites = ("paper", "cites", "paper")
    w, _ = weights_and_mask(g, "cites")
    papers = {"paper": torch.arange(0, g.num_nodes("paper"), 3)}
    fanout = {c: 2 for c in g.canonical_etypes}
    e = dgl.sample_neighbors(g, papers, fanout, prob="w", generator=torch.Generator().manual_seed(1))
    assert bool((w[e.edges(form="eid", etype=cites)] > 0).all()) and e.num_edges("cites") > 0
    assert e.num_edges("writes") > 0  # a type without the data draws uniformly
    homo = g.get_partition_book().map_to_homo_nid(papers["paper"], "paper")
    for nodes, args in ((papers, ()), (homo, ()), (papers, (True,))):  # (True,): DGL 2.1.0's `replace`, sixth
        f = dgl.distributed.sample_etype_neighbors(g, nodes, fanout, "in", "w", *args,
                                                   generator=torch.Generator().manual_seed(1))
        want = e if not args else dgl.sample_neighbors(g, papers, fanout, prob="w", replace=True,
                                                       generator=torch.Generator().manual_seed(1))
        for c in g.canonical_etypes:
            for a, b in zip(f.edges(form="all", etype=c), want.edges(form="all", etype=c)):
                assert torch.equal(a, b), c
    sampler = dgl.dataloading.NeighborSampler([fanout, fanout], prob="w", prefetch_edge_feats=["w"])
    loader = dgl.dataloading.DistNodeDataLoader(g, papers, sampler, batch_size=200)
    for _, _, blocks in loader:
        for b in blocks:
            ids = b.edges[cites].data[dgl.EID]
            assert torch.equal(b.edges["cites"].data["w"], w[ids]) and bool((w[ids] > 0).all())
            assert "w" not in b.edges["writes"].data and b.edges[("author", "writes", "paper")].data[dgl.EID].numel()
