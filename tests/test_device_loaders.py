"""Mini-batches moved to a device (`distributed.transfer`) through the code a GPU run takes:
here on torch's `meta` device, which holds shapes and no data, so a batch moved there shows
that every one of its arrays was moved (an array left on the CPU would stay there), and on
the CPU, where the same code copies nothing and gives the batches a plain loader gives."""

import pytest
import torch

import distgraph as dgl
from distgraph.dataloading import loader as loader_module
from distgraph.distributed.transfer import BatchMover, map_batch
from distgraph.errors import InputError

META = torch.device("meta")
MISSING_GPU = f"cuda:{torch.cuda.device_count()}"  # one past this machine's GPUs, whatever it has


def arrays(batch) -> list[torch.Tensor]:
    """Every array of a mini-batch, in a fixed order."""
    found = []
    map_batch(batch, lambda t: found.append(t) or t)
    return found


def node_loader(g, seeds, device=None, **kwargs):
    sampler = dgl.dataloading.NeighborSampler([4, 3], prefetch_node_feats=["feat"], prefetch_labels=["label"])
    return dgl.dataloading.DistNodeDataLoader(g, seeds, sampler, device, batch_size=40, shuffle=True,
                                              generator=torch.Generator().manual_seed(3), **kwargs)


def edge_loader(g, eids, device=None, **kwargs):
    sampler = dgl.dataloading.NeighborSampler([3, 3], prefetch_node_feats=["feat"])
    return dgl.dataloading.DistEdgeDataLoader(g, eids, sampler, device, batch_size=50, exclude="self",
                                              negative_sampler=dgl.dataloading.negative_sampler.Uniform(2),
                                              generator=torch.Generator().manual_seed(4), **kwargs)


def loaders(sbm, mag, device=None, **kwargs) -> list:
    """Node and edge loaders of a homogeneous and a heterogeneous graph."""
    return [node_loader(sbm, torch.arange(200), device, **kwargs),
            edge_loader(sbm, torch.arange(0, 600, 3), device, **kwargs),
            node_loader(mag, {"paper": torch.arange(150)}, device, **kwargs),
            edge_loader(mag, {"writes": torch.arange(120)}, device, **kwargs)]


@pytest.mark.parametrize("threads", [0, 2])
def test_every_array_of_a_batch_moves_to_the_device(sbm, mag, threads, monkeypatch):
    """The typed views, prefetched data, pair graphs and per-type ids of each batch go too,
    in the batch's shapes and dtypes, whether batches are made inline or ahead in threads."""
    monkeypatch.setattr(loader_module, "batch_threads", lambda runs_user_code, remote=False: threads)
    for plain, moved in zip(loaders(sbm, mag), loaders(sbm, mag, META)):
        count = 0
        for a, b in zip(plain, moved):
            here, there = arrays(a), arrays(b)
            assert len(here) == len(there) > 10
            assert all(x.device.type == "cpu" for x in here) and all(y.device == META for y in there)
            assert [(x.shape, x.dtype) for x in here] == [(y.shape, y.dtype) for y in there]
            count += 1
        assert count == len(plain) == len(moved) > 2


def test_on_the_cpu_the_device_path_gives_the_plain_batches(sbm, mag, monkeypatch):
    """device='cpu' with pinning and an alternate stream asked for runs the mover, which moves
    nothing: the batches are the plain loader's, array for array."""
    monkeypatch.setattr(loader_module, "batch_threads", lambda runs_user_code, remote=False: 2)
    for plain, moved in zip(loaders(sbm, mag), loaders(sbm, mag, "cpu", pin_prefetcher=True,
                                                       use_alternate_streams=True)):
        assert moved.mover.device == torch.device("cpu")
        for a, b in zip(plain, moved):
            here, there = arrays(a), arrays(b)
            assert len(here) == len(there) and all(torch.equal(x, y) for x, y in zip(here, there))


def test_ids_that_are_one_tensor_stay_one_tensor_on_the_device(sbm):
    """A block's destinations are its first sources and the input nodes are the first block's
    sources: one copy each, as on the CPU."""
    inputs, outputs, blocks = next(iter(node_loader(sbm, torch.arange(100), META)))
    assert inputs is blocks[0].src_nodes and blocks[0].srcdata[dgl.NID] is blocks[0].src_nodes
    assert blocks[1].src_nodes is blocks[0].dst_nodes


def test_the_samplers_output_device_is_where_batches_go(sbm):
    sampler = dgl.dataloading.NeighborSampler([3], prefetch_node_feats=["feat"], output_device="meta")
    inputs, outputs, (block,) = sampler.sample(sbm, torch.arange(10))
    assert inputs.device == outputs.device == block.srcdata["feat"].device == META
    by_default = dgl.dataloading.DistNodeDataLoader(sbm, torch.arange(30), sampler, batch_size=10)
    assert all(y.device == META for batch in by_default for y in arrays(batch))
    on_cpu = dgl.dataloading.DataLoader(sbm, torch.arange(30), sampler, "cpu", batch_size=10)
    assert all(y.device.type == "cpu" for batch in on_cpu for y in arrays(batch))


def test_blocks_and_pair_graphs_make_their_positions_on_their_device(sbm):
    inputs, pos, neg, blocks = next(iter(edge_loader(sbm, torch.arange(0, 100), META)))
    b = blocks[0]
    assert b.edges(form="eid").device == b.srcnodes().device == b.dstnodes().device == META
    assert b.edge_type().device == b.src_type().device == META
    assert pos.nodes().device == neg.edges(form="eid").device == META
    cpu_blocks = next(iter(edge_loader(sbm, torch.arange(0, 100))))[-1]
    assert b.edges(form="eid").shape == cpu_blocks[0].edges(form="eid").shape


def test_a_block_moves_with_all_its_arrays(mag):
    """`Block.to` (`map_arrays`) takes every array, typed data included, and `to` the device
    it is on is the block itself."""
    _, _, blocks = next(iter(node_loader(mag, {"paper": torch.arange(50)})))
    b = blocks[0]
    b.edata["w"] = {c: torch.rand(b.num_edges(c)) for c in b.canonical_etypes}
    assert b.to("cpu") is b
    moved = b.to(META, non_blocking=True)
    assert [(x.shape, x.dtype) for x in arrays(moved)] == [(x.shape, x.dtype) for x in arrays(b)]
    assert all(x.device == META for x in arrays(moved)) and set(moved.edata["w"]) == set(b.canonical_etypes)
    copied = b.map_arrays(torch.clone)
    assert all(torch.equal(x, y) and x is not y for x, y in zip(arrays(b), arrays(copied)))
    assert copied.types.id_map is b.types.id_map
    assert torch.equal(copied.edges["writes"].data[dgl.EID], b.edges["writes"].data[dgl.EID])


def test_a_mover_without_a_device_leaves_batches_as_they_are():
    batch = ([1, 2], {"x": torch.ones(2)})
    assert BatchMover(None).move(batch) is batch
    moved = BatchMover(META, pin=True, alternate_stream=True).move(batch)
    assert moved[0] == [1, 2] and moved[1]["x"].device == META


@pytest.mark.parametrize("make", [
    lambda g, s: dgl.dataloading.DistNodeDataLoader(g, torch.arange(10), s, device=MISSING_GPU),
    lambda g, s: dgl.dataloading.DistEdgeDataLoader(g, torch.arange(10), s, MISSING_GPU),
    lambda g, s: dgl.dataloading.NeighborSampler([2], output_device=MISSING_GPU),
    lambda g, s: dgl.dataloading.DistNodeDataLoader(g, torch.arange(10), s, device="gpu"),
])
def test_a_device_this_machine_lacks_is_one_clear_line(sbm, make):
    with pytest.raises(InputError) as err:
        make(sbm, dgl.dataloading.NeighborSampler([2]))
    text = str(err.value)
    assert "\n" not in text and "is not available here" in text and "pass 'cpu' or a device it has" in text


def test_gpu_sampling_and_gpu_caches_are_refused_naming_the_way_to_a_gpu(sbm):
    sampler = dgl.dataloading.NeighborSampler([2])
    with pytest.raises(InputError, match="leave use_uva False and pass device="):
        dgl.dataloading.DataLoader(sbm, torch.arange(10), sampler, use_uva=True)
    with pytest.raises(InputError, match="leave gpu_cache None"):
        dgl.dataloading.DataLoader(sbm, torch.arange(10), sampler, gpu_cache={"node": {"feat": 100}})
    assert len(dgl.dataloading.DataLoader(sbm, torch.arange(10), sampler, use_prefetch_thread=True,
                                          pin_prefetcher=True, batch_size=5)) == 2
