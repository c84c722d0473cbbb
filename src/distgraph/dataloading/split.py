"""`node_split` / `edge_split`: each trainer's disjoint share of a node or edge set.

A launched trainer's rank and the number of trainers come from the launcher (as DGL takes
them from its own roles), so a script that trains sparse embeddings only, without
torch.distributed, still gets a disjoint share.

Ids are relabelled so each partition owns a contiguous range, so the sorted id list is
already grouped by owner. With `force_even`, trainer r takes the r-th equal slice of it:
trainers of machine m (ranks m*T .. m*T+T-1, as the launcher numbers them) get slices
that lie in partition m's range as far as the set is balanced across partitions. Without
it, each machine's trainers split the ids their own partition owns.

With `node_trainer_ids` (the `trainer_id` node data `partition_graph(...,
num_trainers_per_machine=T)` writes: the trainer whose METIS part each node fell in), the ids
are ordered by trainer id first, so each trainer's slice is, as far as the counts allow, the
nodes of its own part; without `force_even`, each trainer takes exactly its own part's.

A mask of any dtype (bool, integer, float: nonzero = selected) selects as in DGL; an integer
tensor that is not one (values other than 0 and 1, or distinct ids covering every node) is a
list of ids. DGL's differences, kept out on purpose: it reads every input as a mask (so
`node_split(np.arange(n), ...)` loses node 0; ids are ids here), its splits may differ by one element between trainers beyond what the counts force,
and it reseeds numpy's global random generator.
"""

from __future__ import annotations

import torch

from ..errors import InputError
from ..ids import as_selection
from ..partition import RangePartitionBook


def trainer_rank(rank: int | None = None, world_size: int | None = None) -> tuple[int, int]:
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


def _book(data, partition_book: RangePartitionBook | None) -> RangePartitionBook:
    """The partition book: as given, else that of the DistTensor `data` (DGL's rule), else the
    runtime's (the partitioning this process uses)."""
    if partition_book is not None:
        return partition_book
    policy = getattr(data, "part_policy", None)
    if policy is not None:
        return policy.partition_book
    from ..distributed.runtime import get_context, is_initialized

    if is_initialized() and get_context().book is not None:
        return get_context().book
    raise InputError("no partition book: pass partition_book=g.get_partition_book() (or a DistTensor mask)")


MASK_SLICE = 1 << 24  # rows of a DistTensor mask pulled at a time


def _dist_mask_ids(mask) -> torch.Tensor | None:
    """Ids set in a DistTensor as long as the id space, pulled a slice at a time (a 100M-node
    mask with the index of every row would be ~1 GB a trainer); None when an integer slice
    holds values other than 0 and 1 (the tensor holds ids, not a mask)."""
    n, found = len(mask), []
    for s in range(0, n, MASK_SLICE):
        piece = mask[torch.arange(s, min(s + MASK_SLICE, n))]
        if not (piece.dtype == torch.bool or piece.dtype.is_floating_point) and piece.numel() and \
                (int(piece.min()) < 0 or int(piece.max()) > 1):
            return None
        found.append(torch.nonzero(piece).flatten() + s)
    return torch.cat(found) if found else torch.zeros(0, dtype=torch.int64)


def _ids(nodes, count: int, what: str) -> torch.Tensor:
    """Sorted distinct ids of `nodes`: a mask of any dtype (nonzero = selected, DGL's reading of
    `g.ndata['train_mask']` whether bool, int8 or float) or ids, told apart by `as_selection`."""
    if hasattr(nodes, "part_policy"):  # a DistTensor (DGL passes g.ndata["train_mask"] itself)
        if len(nodes) == count and count > 2:
            ids = _dist_mask_ids(nodes)
            if ids is not None:
                return ids
        nodes = nodes[torch.arange(len(nodes))]
    ids = torch.unique(as_selection(nodes, count, what))  # sorted: grouped by owning partition
    if ids.numel() and (int(ids[0]) < 0 or int(ids[-1]) >= count):
        raise InputError(f"{what} ids must lie in [0, {count})")
    return ids


def _by_trainer(ids: torch.Tensor, trainer_ids, count: int, world_size: int, what: str) -> torch.Tensor:
    """Trainer id of each of `ids`, from `trainer_ids` (one per node or edge, a tensor or DistTensor)."""
    if len(trainer_ids) != count:
        raise InputError(f"{what} has {len(trainer_ids)} entries but there are {count}")
    owner = torch.as_tensor(trainer_ids[ids]).to(torch.int64)
    if owner.numel() and (int(owner.min()) < 0 or int(owner.max()) >= world_size):
        raise InputError(f"{what} must hold trainer ids in [0, {world_size}) (partition_graph's "
                         f"num_trainers_per_machine x machines)")
    return owner


def _split(ids: torch.Tensor, owner: torch.Tensor, num_parts: int, rank: int, world_size: int,
           force_even: bool, trainer: torch.Tensor | None) -> torch.Tensor:
    if world_size % num_parts:
        raise InputError(f"{world_size} trainers cannot be spread evenly over {num_parts} machines")
    if trainer is not None:
        if not force_even:
            return ids[trainer == rank]
        ids = ids[torch.argsort(trainer, stable=True)]  # each trainer's own part first, in id order
        n = ids.numel()
        return ids[rank * n // world_size:(rank + 1) * n // world_size].sort().values
    if force_even:
        n = ids.numel()
        return ids[rank * n // world_size:(rank + 1) * n // world_size]
    per_machine = world_size // num_parts
    machine, local_rank = divmod(rank, per_machine)
    mine = ids[owner == machine]
    n = mine.numel()
    return mine[local_rank * n // per_machine:(local_rank + 1) * n // per_machine]


def _share(kind: str, items, partition_book, type_name, rank, force_even: bool, trainer_ids, world_size):
    """This trainer's share of the nodes or edges `items` of one type (see the module's doc)."""
    rank, world_size = trainer_rank(rank, world_size)
    book = _book(items, partition_book)
    count = book.num_nodes(type_name) if kind == "node" else book.num_edges(type_name)
    ids = _ids(items, count, f"{kind}s")
    trainer = None if trainer_ids is None else _by_trainer(ids, trainer_ids, count, world_size, f"{kind}_trainer_ids")
    owner = book.nid2partid(ids, type_name) if kind == "node" else book.eid2partid(ids, type_name)
    return _split(ids, owner, book.num_partitions(), rank, world_size, force_even, trainer)


def node_split(nodes, partition_book: RangePartitionBook | None = None, ntype: str = "_N", rank: int | None = None,
               force_even: bool = True, node_trainer_ids=None, world_size: int | None = None) -> torch.Tensor:
    """This trainer's share of `nodes` (a mask of any dtype over `ntype`'s nodes, or ids)."""
    return _share("node", nodes, partition_book, ntype, rank, force_even, node_trainer_ids, world_size)


def edge_split(edges, partition_book: RangePartitionBook | None = None, etype=None, rank: int | None = None,
               force_even: bool = True, edge_trainer_ids=None, world_size: int | None = None) -> torch.Tensor:
    """This trainer's share of `edges` (a mask of any dtype over `etype`'s edges, or ids)."""
    return _share("edge", edges, partition_book, etype, rank, force_even, edge_trainer_ids, world_size)


def even_split(count: int, rank: int | None = None, world_size: int | None = None) -> torch.Tensor:
    """`node_split(torch.arange(count), force_even=True)` (every node or edge of a type) without
    the list of all ids: this trainer's contiguous slice of them."""
    rank, world_size = trainer_rank(rank, world_size)
    return torch.arange(rank * count // world_size, (rank + 1) * count // world_size)
