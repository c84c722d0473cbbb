"""Where a KGE process computes, as DGL-KE decides it: with `--gpu` ids, process i of a machine
on GPU `ids[i % len(ids)]`, otherwise the CPU; and moving rows there and back.

Every step and ranking runs the same code on whichever device: tensors are moved with
`distributed.transfer.to_device` / `to_host`, which are the identity on the CPU and pinned,
non-blocking copies for a CUDA device. The device type that `--gpu` ids name is `cluster.env.kge_gpu_type`'s:
`cuda`, or `cpu` to run the GPU path on CPUs (what the tests on machines without a GPU do)."""

from __future__ import annotations

import torch
from torch import Tensor

from ...cluster.env import kge_gpu_type
from ...distributed.transfer import to_device
from ...errors import InputError
from ..config import gpu_ids

_RESIDENT_SHARE = 0.5  # of the device's free memory a table copied there for ranking may take


def device_of(gpu: list[int] | None, local_rank: int) -> torch.device:
    """The device of a machine's process `local_rank`: its GPU of `--gpu`, or the CPU."""
    ids = gpu_ids(gpu)
    return torch.device(kge_gpu_type(), ids[local_rank % len(ids)]) if ids else torch.device("cpu")


def check_gpus(gpu: list[int] | None) -> None:
    """One clear error when a `--gpu` id names no device of this machine."""
    ids = gpu_ids(gpu)
    if not ids or kge_gpu_type() != "cuda":
        return
    found = torch.cuda.device_count() if torch.cuda.is_available() else 0
    missing = [g for g in ids if g >= found]
    if missing:
        have = f"its GPUs are 0 to {found - 1}" if found else "torch finds no CUDA device on it"
        raise InputError(f"--gpu {' '.join(map(str, ids))}: this machine has no GPU {missing[0]} ({have}); pass "
                         f"ids of its GPUs, or drop --gpu to train on CPUs")


def use_device(device: torch.device) -> None:
    """Make `device` this process's current one (a CUDA device; nothing to do for others)."""
    if device.type == "cuda":
        torch.cuda.set_device(device)


def to_host(x: Tensor) -> Tensor:
    """`x` in CPU memory (itself when it is there)."""
    return x.to("cpu")


def resident(x: Tensor, device: torch.device) -> Tensor:
    """`x` copied to `device` when it takes at most half its free memory (a CUDA device), else
    `x` where it is: its blocks then travel one at a time when they are used."""
    if device.type == "cuda" and x.numel() * x.element_size() > _RESIDENT_SHARE * torch.cuda.mem_get_info(device)[0]:
        return x
    return to_device(x, device)
