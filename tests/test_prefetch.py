"""Batches made ahead in threads (`dataloading.prefetch`): the same batches, in order, as
made one at a time in the calling thread; errors at their batch's turn; nothing left running."""

import threading
import time

import pytest
import torch

from distgraph.dataloading import DistEdgeDataLoader, DistNodeDataLoader, MultiLayerNeighborSampler, negative_sampler
from distgraph.dataloading import loader as loader_module
from distgraph.dataloading.prefetch import made_ahead


def flat(batch) -> list[torch.Tensor]:
    """Every tensor of a node or edge mini-batch, in a fixed order."""
    *head, blocks = batch
    out = []
    for x in head:
        out += [x] if isinstance(x, torch.Tensor) else [x.node_ids, x.edge_index]
    for b in blocks:
        out += [b.src_nodes, b.dst_nodes, b.edge_index, b.eids]
    return out


def batches(loader, threads: int | None, monkeypatch) -> list[list[torch.Tensor]]:
    if threads is not None:
        monkeypatch.setattr(loader_module, "batch_threads", lambda runs_user_code, remote=False: threads)
    got = [flat(b) for b in loader]
    monkeypatch.undo()
    return got


@pytest.mark.parametrize("threads", [1, 3])
def test_node_batches_made_ahead_equal_those_made_in_the_calling_thread(sbm, threads, monkeypatch):
    seeds = torch.nonzero(sbm.ndata["train_mask"]).flatten()
    loader = DistNodeDataLoader(sbm, seeds, MultiLayerNeighborSampler([5, 3]), batch_size=37, shuffle=True,
                                generator=torch.Generator().manual_seed(4))
    state = loader.generator.get_state()
    inline = batches(loader, 0, monkeypatch)
    loader.generator.set_state(state)
    ahead = batches(loader, threads, monkeypatch)
    assert len(inline) == len(ahead) == len(loader) > 3
    for a, b in zip(inline, ahead):
        assert len(a) == len(b) and all(torch.equal(x, y) for x, y in zip(a, b))



def test_an_epochs_plan_names_the_batches_iteration_makes(sbm, monkeypatch):
    """`epoch_plan` (seeds and the seed of their draws per batch) takes the generator's draws an
    epoch takes, and each planned batch made anywhere equals the one iteration yields."""
    seeds = torch.nonzero(sbm.ndata["train_mask"]).flatten()
    loader = DistNodeDataLoader(sbm, seeds, MultiLayerNeighborSampler([5, 3]), batch_size=37, shuffle=True,
                                generator=torch.Generator().manual_seed(9))
    state = loader.generator.get_state()
    plan = loader.epoch_plan()
    after_plan = loader.generator.get_state()
    loader.generator.set_state(state)
    iterated = batches(loader, 2, monkeypatch)
    assert torch.equal(loader.generator.get_state(), after_plan)
    assert len(plan) == len(iterated) == len(loader) > 3
    assert torch.equal(torch.cat([s for s, _ in plan]).sort().values, seeds.sort().values)  # each seed once
    for job, got in zip(plan, iterated):
        made = flat(loader.present(loader.collate(job)))
        assert len(made) == len(got) and all(torch.equal(x, y) for x, y in zip(made, got))

def test_edge_batches_with_a_users_negative_sampler_are_made_by_one_thread_in_order(sbm, monkeypatch):
    threads = set()

    def draw(g, eids):  # DGL's form, drawing from torch's global generator
        threads.add(threading.get_ident())
        return g.src[eids].repeat_interleave(2), torch.randint(0, g.num_nodes(), (2 * eids.numel(),))

    def run(inline: bool):
        torch.manual_seed(5)
        loader = DistEdgeDataLoader(sbm, torch.arange(400), MultiLayerNeighborSampler([4]), batch_size=50,
                                    negative_sampler=draw, generator=torch.Generator().manual_seed(6))
        if inline:
            monkeypatch.setattr(loader_module, "batch_threads", lambda runs_user_code, remote=False: 0)
        got = [flat(b) for b in loader]
        monkeypatch.undo()
        return got

    inline = run(True)
    threads.clear()
    torch.set_num_threads(2)
    try:
        ahead = run(False)
    finally:
        torch.set_num_threads(1)
    assert len(threads) == 1 and threading.get_ident() not in threads  # one background thread
    for a, b in zip(inline, ahead):
        assert all(torch.equal(x, y) for x, y in zip(a, b))
    # the built-in samplers run in as many threads as torch has
    loader = DistEdgeDataLoader(sbm, torch.arange(400), MultiLayerNeighborSampler([4]), batch_size=50,
                                negative_sampler=negative_sampler.Uniform(2))
    assert not loader.collator.runs_user_code


def test_results_come_in_order_and_an_error_at_its_turn():
    def slow(i):
        time.sleep(0.02 * (5 - i % 5))  # later items finish first
        if i == 7:
            raise ValueError("item 7")
        return i * i

    got = []
    with pytest.raises(ValueError, match="item 7"):
        for x in made_ahead(slow, range(12), threads=3, depth=4):
            got.append(x)
    assert got == [i * i for i in range(7)]


def test_leaving_early_starts_no_more_items():
    started = []

    def work(i):
        started.append(i)
        time.sleep(0.01)
        return i

    it = made_ahead(work, range(100), threads=2, depth=3)
    assert [next(it), next(it)] == [0, 1]
    it.close()
    time.sleep(0.2)
    # at most the items queued when the loop was left (depth + 1 ahead of the two taken)
    assert len(started) <= 6 and max(started) < 6
    names = [t.name for t in threading.enumerate() if t.name.startswith("distgraph-batches")]
    assert not names  # idle workers end once the pool is shut down


def test_one_torch_thread_makes_batches_ahead_only_when_they_wait_on_other_hosts():
    from distgraph.dataloading.prefetch import batch_threads

    torch.set_num_threads(1)
    assert batch_threads(False) == 0 and batch_threads(True) == 0
    assert batch_threads(False, waits_on_other_hosts=True) == 1
    torch.set_num_threads(2)
    try:
        assert batch_threads(False) == 2 and batch_threads(True) == 1
    finally:
        torch.set_num_threads(1)


def test_batch_threads_run_torch_on_one_core_each_and_leave_the_callers_count():
    """With several batch threads, each runs its torch operations on one core (the batches are
    the parallelism); the calling thread keeps the count it set, for its own work."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        counts = list(made_ahead(lambda _: torch.get_num_threads(), range(6), threads=2, depth=2))
        assert counts == [1] * 6
        assert torch.get_num_threads() == 2
        # one thread of batches (made ahead beside the step) keeps torch's count
        assert list(made_ahead(lambda _: torch.get_num_threads(), range(2), threads=1, depth=1)) == [2, 2]
    finally:
        torch.set_num_threads(before)


def test_a_loaders_epochs_share_its_batch_threads_which_end_with_it(sbm, monkeypatch):
    """A loader keeps its batch threads from one epoch to the next (new threads each epoch paid
    for their allocator arenas and relabel tables in their first batches); they end once the
    loader is gone."""
    import gc

    monkeypatch.setattr(loader_module, "batch_threads", lambda runs_user_code, remote=False: 2)
    seeds = torch.nonzero(sbm.ndata["train_mask"]).flatten()
    loader = DistNodeDataLoader(sbm, seeds, MultiLayerNeighborSampler([5, 3]), batch_size=37, shuffle=True)

    def epoch_threads() -> set[threading.Thread]:
        for _ in loader:
            pass
        return {t for t in threading.enumerate() if t.name.startswith("distgraph-batches")}

    first = epoch_threads()
    assert first and epoch_threads() == first
    del loader
    gc.collect()
    deadline = time.monotonic() + 30
    while any(t.name.startswith("distgraph-batches") for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not [t.name for t in threading.enumerate() if t.name.startswith("distgraph-batches")]
