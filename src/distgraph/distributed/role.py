"""Ranks and counts under DGL's names (`dgl.distributed.role`, `get_rank`, `get_num_client`):
what this process is in the job, from the launcher's environment (standalone: rank 0 of 1)."""

from __future__ import annotations

from .runtime import get_context


def get_role() -> str:
    """'default' for a trainer (DGL's name for it), 'sampler', or 'standalone'."""
    role = get_context().role
    return "default" if role == "trainer" else role


def get_trainer_rank() -> int:
    """This trainer's rank among all trainers of the job (a sampler: its trainer's)."""
    return get_context().rank


def get_num_trainers() -> int:
    """Trainers in the whole job."""
    return get_context().num_trainers


def get_global_rank() -> int:
    """The rank of this process among the job's clients, trainers first (as DGL numbers them)."""
    ctx = get_context()
    if ctx.role != "sampler":
        return ctx.rank
    return ctx.num_trainers + ctx.rank * ctx.num_samplers + ctx.sampler_id


def get_rank(role: str | None = None) -> int:
    """This process's rank within its role (`dgl.distributed.get_rank()`, the client rank,
    without a role)."""
    return get_trainer_rank() if role in (None, "default") else get_global_rank()


def get_num_client() -> int:
    """Every client of the servers: the trainers and their sampler processes (1 standalone)."""
    ctx = get_context()
    return ctx.num_trainers * (1 + (ctx.num_samplers if not ctx.standalone else 0))


get_num_clients = get_num_client
