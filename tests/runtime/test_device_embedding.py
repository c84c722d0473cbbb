"""`DistEmbedding` on a device and a trainer's device set-up (`distributed.devices`), through
the code a GPU run takes, with device="cpu" (tests/runtime/test_device_gpu.py runs the same
on a GPU)."""

import pytest
import torch

from distgraph.distributed import devices
from distgraph.errors import InputError
from distgraph.optim import SparseAdagrad, SparseAdam

from .conftest import NUM_NODES

ROWS = NUM_NODES  # a table of one row per node (its partition policy)


@pytest.fixture
def standalone(runtime, parts):
    runtime.initialize(part_config=str(parts[1]))
    return runtime


def train(emb, opt, device, through_device: bool, steps: int = 4) -> list[torch.Tensor]:
    """A few steps of a squared loss on rows of `emb` (ids repeat within a batch); the loss of each."""
    gen = torch.Generator().manual_seed(5)
    losses = []
    for _ in range(steps):
        ids = torch.randint(0, ROWS, (200,), generator=gen)
        target = torch.randn(200, 4, generator=gen).to(device)
        rows = emb(ids.to(device, torch.int32), device) if through_device else emb(ids)
        assert rows.device == torch.device(device) and rows.is_leaf and rows.requires_grad
        loss = ((rows - target) ** 2).sum()
        opt.zero_grad()
        loss.backward()
        found_ids, grads = emb.gradients()
        assert found_ids.device == grads.device == rows.device  # summed where they were computed
        opt.step()
        losses.append(loss.detach().cpu())
    return losses


def trained_both_ways(dist, device) -> dict:
    """{"device" / "plain": (weights, losses)} of tables trained through `device` and by the
    plain CPU path, from the same start, with SparseAdagrad and SparseAdam."""
    out = {}
    for way in ("device", "plain"):
        a = dist.DistEmbedding(ROWS, 4, f"a-{way}", init_func=dist.Uniform(-1, 1, seed=3))
        b = dist.DistEmbedding(ROWS, 4, f"b-{way}", init_func=dist.Uniform(-1, 1, seed=3))
        through = way == "device"
        losses = train(a, SparseAdagrad([a], lr=0.1), device if through else "cpu", through)
        losses += train(b, SparseAdam([b], lr=0.05), device if through else "cpu", through)
        out[way] = ([t.weight[torch.arange(ROWS)] for t in (a, b)], losses)
    return out


def dense_adagrad_reference(dist) -> torch.Tensor:
    """The rows dense `torch.optim.Adagrad` leaves after `train`'s steps with SparseAdagrad."""
    start = dist.DistEmbedding(ROWS, 4, "start", init_func=dist.Uniform(-1, 1, seed=3)).weight[torch.arange(ROWS)]
    dense = torch.nn.Parameter(start.clone())
    opt = torch.optim.Adagrad([dense], lr=0.1, eps=1e-10)
    gen = torch.Generator().manual_seed(5)
    for _ in range(4):
        ids = torch.randint(0, ROWS, (200,), generator=gen)
        target = torch.randn(200, 4, generator=gen)
        opt.zero_grad()
        ((dense[ids] - target) ** 2).sum().backward()
        opt.step()
    return dense.detach()


def test_an_embedding_trained_through_the_device_path_equals_the_plain_one(standalone):
    """Ids of another dtype and device, rows copied to the device, gradients summed there and
    sent back: with device="cpu" the very values of the plain path, and of dense Adagrad."""
    out = trained_both_ways(standalone, torch.device("cpu"))
    (dev_weights, dev_losses), (plain_weights, plain_losses) = out["device"], out["plain"]
    assert all(torch.equal(x, y) for x, y in zip(dev_weights, plain_weights))
    assert all(torch.equal(x, y) for x, y in zip(dev_losses, plain_losses))
    assert torch.allclose(plain_weights[0], dense_adagrad_reference(standalone), atol=1e-6)


def test_a_trainer_without_gpus_trains_on_the_cpu_and_reduces_over_gloo(standalone, tmp_path):
    assert devices.local_rank() == 0
    device = devices.trainer_device(0)
    assert device == devices.trainer_device(-1) == torch.device("cpu")
    backend = devices.ddp_backend(device)
    assert backend == "gloo"
    torch.manual_seed(0)
    model, x = torch.nn.Linear(3, 2), torch.randn(5, 3)
    plain = torch.nn.Linear(3, 2)
    plain.load_state_dict(model.state_dict())
    store = torch.distributed.FileStore(str(tmp_path / "store"), 1)
    torch.distributed.init_process_group(backend, store=store, rank=0, world_size=1)
    try:
        ddp = devices.data_parallel(model, device)
        assert ddp.device_ids is None and ddp.module is model
        for m in (ddp, plain):  # one trainer: DDP's rank-order average is its own gradient
            m(x).square().sum().backward()
        assert all(torch.equal(a.grad, b.grad) for a, b in zip(model.parameters(), plain.parameters()))
    finally:
        torch.distributed.destroy_process_group()


def test_more_gpus_than_the_machine_has_is_one_clear_line(standalone):
    too_many = torch.cuda.device_count() + 1
    with pytest.raises(InputError) as err:
        devices.trainer_device(too_many)
    assert "\n" not in str(err.value)
    assert str(err.value).startswith(f"num_gpus is {too_many} but torch finds {too_many - 1} CUDA devices")


@pytest.mark.parametrize("gathered, nccl, backend", [
    (["GPU-a", "GPU-b"], True, devices.GPU_BACKEND),  # a GPU each: NCCL for CUDA tensors, gloo beside it
    (["GPU-a", "GPU-a"], True, "gloo"),  # two trainers on one GPU: NCCL would refuse the group
    (["GPU-a", None], True, "gloo"),  # a trainer on the CPU
    (["GPU-a", "GPU-b"], False, "gloo"),  # a torch without NCCL
])
def test_nccl_only_when_every_trainer_has_a_gpu_of_its_own(standalone, monkeypatch, gathered, nccl, backend):
    """What each trainer's `ddp_backend` decides from the GPUs the trainers report (gathered
    here as two trainers of a job would report them)."""
    monkeypatch.setattr(devices, "all_gather", lambda mine: gathered)
    monkeypatch.setattr(devices.tdist, "is_nccl_available", lambda: nccl)
    assert devices.ddp_backend("cpu") == backend
