"""A KGE model's embedding tables on the runtime: the entity table partitioned like the KG's
entities (`node~_N`), each relation table (`relation`, TransR's `projection`) a plain table
spread over the machines (`table~<rows>`), each trained with DGL-KE's row-wise Adagrad
(`optim.RowAdagrad`). Standalone, in one machine's job and across machines alike: rows a
process maps are read and updated in place, the others travel."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch import Tensor

from ...distributed import DistTensor, Uniform, node_policy_str, table_policy_str
from ...distributed.dist_tensor import start_pull
from ...kvstore.client import PendingPull
from ...optim.row_adagrad import RowAdagrad
from ...optim.sparse import coalesce
from ..models import KGEModel

PREFIX = "kge~"
BLOCK_BYTES = 16 << 20  # rows of a table read at once when checking and saving it: a bounded share of any table


def block_rows(row_shape: tuple[int, ...]) -> int:
    """How many float32 rows of `row_shape` make about BLOCK_BYTES."""
    return max(1, BLOCK_BYTES // (4 * int(np.prod(row_shape, dtype=np.int64))))


class KGETables:
    """`tables["entity"]` is indexed by (partition) entity id, the others by relation id; with
    `entity_slots`, the entity table is instead that many rows spread evenly over the machines
    (each machine's slots of entity partitions kept on its disk: `dist_buckets`)."""

    def __init__(self, model: KGEModel, n_entities: int, n_relations: int, seed: int, lr: float,
                 entity_slots: int | None = None):
        shapes = {"entity": (n_entities if entity_slots is None else entity_slots, model.entity_dim)}
        shapes.update({name: (n_relations, w) for name, w in model.relation_tables().items()})
        self.tables: dict[str, DistTensor] = {}
        for i, (name, shape) in enumerate(shapes.items()):
            bound = model.init_range(name)
            policy = table_policy_str(shape[0]) if name != "entity" or entity_slots else node_policy_str()
            self.tables[name] = DistTensor(shape, torch.float32, f"{PREFIX}{name}", Uniform(-bound, bound, seed + i),
                                           policy, persistent=True)
        self.optimizers = {name: RowAdagrad(t, lr) for name, t in self.tables.items()}

    def relation_names(self) -> list[str]:
        """Names of the relation-indexed tables, in the model's `rel` tuple order."""
        return [n for n in self.tables if n != "entity"]

    def rows(self, name: str, ids: Tensor) -> Tensor:
        return self.tables[name][ids]

    def start_rows(self, wanted: list[tuple[str, Tensor]]) -> PendingPull:
        """Ask for `rows` of several tables in one round trip; `.result()` gives them, after
        the updates of this process made in between (`start_update`)."""
        return start_pull([(self.tables[name], ids) for name, ids in wanted])

    def start_update(self, name: str, ids: Tensor, grads: Tensor) -> Callable[[], None]:
        """Sum the gradients of repeated ids, then one row-wise Adagrad step on each row: sent
        now to the servers of other machines' rows; the update of the rows in this process's
        memory is returned, to run before they are read again."""
        return self.optimizers[name].start_step(*coalesce(ids, grads))

    def checkpointed(self) -> list[DistTensor]:
        """Every tensor a checkpoint needs: the tables and their Adagrad state."""
        return [*self.tables.values(), *(o.state for o in self.optimizers.values())]
