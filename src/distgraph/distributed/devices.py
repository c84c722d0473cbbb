"""A trainer's device and its dense model's data parallelism, as DistDGL's examples set them
up: each trainer trains on `cuda:<local rank % num_gpus>` (`--num_gpus`; 0 or -1: the CPU),
and DDP reduces the dense gradients over NCCL when every trainer has a GPU of its own (NCCL
refuses two ranks on one GPU), over gloo otherwise (gloo takes CUDA tensors too). The
graph's own traffic (sampling, features, sparse embeddings) stays on the runtime's
connections either way.
"""

from __future__ import annotations

import torch
import torch.distributed as tdist

from ..errors import InputError
from .ddp import rank_order_allreduce_hook
from .runtime import all_gather, get_context

GPU_BACKEND = "cpu:gloo,cuda:nccl"  # CUDA tensors over NCCL; CPU ones (sums, counts) over gloo


def local_rank() -> int:
    """This trainer's index among the trainers of its machine (0 standalone)."""
    return get_context().local_rank


def trainer_device(num_gpus: int) -> torch.device:
    """The device this trainer trains on (DGL's `--num_gpus`): the CPU for `num_gpus` <= 0, else
    `cuda:<local rank % num_gpus>`, made the current CUDA device. Call after `initialize`."""
    if num_gpus <= 0:
        return torch.device("cpu")
    found = torch.cuda.device_count()
    if found < num_gpus:
        raise InputError(f"num_gpus is {num_gpus} but torch finds {found} CUDA devices on this machine: pass "
                         f"{found} or fewer (0: train on the CPU)")
    device = torch.device("cuda", local_rank() % num_gpus)
    torch.cuda.set_device(device)
    return device


def ddp_backend(device: torch.device | str) -> str:
    """The torch.distributed backend for the trainers' process group: NCCL for CUDA tensors
    (with gloo for CPU ones) when every trainer's `device` is a GPU no other trainer has and
    torch has NCCL, else gloo. Every trainer calls it, after `initialize` (it gathers the
    trainers' GPUs, by their UUIDs)."""
    device = torch.device(device)
    gpus = all_gather(str(torch.cuda.get_device_properties(device).uuid) if device.type == "cuda" else None)
    own = None not in gpus and len(set(gpus)) == len(gpus)
    return GPU_BACKEND if own and tdist.is_nccl_available() else "gloo"


def data_parallel(model: torch.nn.Module, device: torch.device | str) -> torch.nn.parallel.DistributedDataParallel:
    """`model` moved to `device` and wrapped in DDP (with `device_ids` on a GPU), its gradients
    summed in rank order (`rank_order_allreduce_hook`: the same sums whatever DDP's buckets,
    so a resumed run equals the uninterrupted one)."""
    device = torch.device(device)
    ids = [device] if device.type == "cuda" else None
    ddp = torch.nn.parallel.DistributedDataParallel(model.to(device), device_ids=ids,
                                                    output_device=device if ids else None)
    ddp.register_comm_hook(None, rank_order_allreduce_hook)
    return ddp
