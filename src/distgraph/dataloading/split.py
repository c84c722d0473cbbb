"""`node_split` / `edge_split`: each trainer's disjoint share of a node or edge set.

A launched trainer's rank and the number of trainers come from the launcher (as DGL takes
them from its own roles), so a script that trains sparse embeddings only, without
torch.distributed, still gets a disjoint share.

Ids are relabelled so each partition owns a contiguous range, so the sorted id list is
already grouped by owner. With `force_even`, trainer r takes the r-th equal slice of it:
trainers of machine m (ranks m*T .. m*T+T-1, as the launcher numbers them) get slices
that lie in partition m's range as far as the set is balanced across partitions. Without
it, each machine's trainers split the ids their own partition owns.
"""

from __future__ import annotations

import torch

from ..errors import InputError
from ..partition import RangePartitionBook


def _trainer(rank: int | None, world_size: int | None) -> tuple[int, int]:
    """This trainer's rank and the number of trainers: as given, else as the launcher numbered
    them (whether or not the script set up torch.distributed), else torch.distributed's, else 0 of 1."""
    if rank is None or world_size is None:
        import torch.distributed as dist

        from ..distributed.runtime import get_context, is_initialized

        if is_initialized() and get_context().role == "trainer":
            ctx = get_context()
            rank = ctx.rank if rank is None else rank
            world_size = ctx.num_trainers if world_size is None else world_size
        elif dist.is_available() and dist.is_initialized():
            rank = dist.get_rank() if rank is None else rank
            world_size = dist.get_world_size() if world_size is None else world_size
        else:
            rank, world_size = rank or 0, world_size or 1
    if not 0 <= rank < world_size:
        raise InputError(f"rank {rank} is out of range for {world_size} trainers")
    return rank, world_size


def _ids(nodes, count: int, what: str) -> torch.Tensor:
    if hasattr(nodes, "part_policy"):  # a DistTensor mask (DGL passes g.ndata["train_mask"] itself)
        nodes = nodes[torch.arange(len(nodes))]
    t = torch.as_tensor(nodes)
    if t.dtype == torch.bool:
        if t.numel() != count:
            raise InputError(f"{what} mask has {t.numel()} entries but there are {count}")
        return torch.nonzero(t).flatten()
    if t.dtype.is_floating_point:
        raise InputError(f"{what} must be a boolean mask or integer ids, got dtype {t.dtype}")
    ids = torch.unique(t.reshape(-1).to(torch.int64))  # sorted: grouped by owning partition
    if ids.numel() and (int(ids[0]) < 0 or int(ids[-1]) >= count):
        raise InputError(f"{what} ids must lie in [0, {count})")
    return ids


def _split(ids: torch.Tensor, owner: torch.Tensor, num_parts: int, rank: int, world_size: int,
           force_even: bool) -> torch.Tensor:
    if world_size % num_parts:
        raise InputError(f"{world_size} trainers cannot be spread evenly over {num_parts} machines")
    if force_even:
        n = ids.numel()
        return ids[rank * n // world_size:(rank + 1) * n // world_size]
    per_machine = world_size // num_parts
    machine, local_rank = divmod(rank, per_machine)
    mine = ids[owner == machine]
    n = mine.numel()
    return mine[local_rank * n // per_machine:(local_rank + 1) * n // per_machine]


def node_split(nodes, partition_book: RangePartitionBook, ntype: str = "_N", rank: int | None = None,
               force_even: bool = True, world_size: int | None = None) -> torch.Tensor:
    """This trainer's share of `nodes` (a boolean mask over `ntype`'s nodes, or ids)."""
    rank, world_size = _trainer(rank, world_size)
    ids = _ids(nodes, partition_book.num_nodes(ntype), "nodes")
    return _split(ids, partition_book.nid2partid(ids, ntype), partition_book.num_partitions(), rank, world_size,
                  force_even)


def edge_split(edges, partition_book: RangePartitionBook, etype=None, rank: int | None = None,
               force_even: bool = True, world_size: int | None = None) -> torch.Tensor:
    """This trainer's share of `edges` (a boolean mask over `etype`'s edges, or ids)."""
    rank, world_size = _trainer(rank, world_size)
    ids = _ids(edges, partition_book.num_edges(etype), "edges")
    return _split(ids, partition_book.eid2partid(ids, etype), partition_book.num_partitions(), rank, world_size,
                  force_even)
