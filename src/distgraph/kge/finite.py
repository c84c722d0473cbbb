"""Embedding tables with non-finite rows are refused, naming how many rows and which table.

A NaN score is never >= the true entity's, so ranking against NaN rows would count them as
beaten and raise the MRR of a model that diverged. `kge eval` checks the saved tables, a
run checks its tables when training ends, and each ranked shard is checked where it lives.
Works on numpy arrays (a CPU tensor's `.numpy()` is a view), so `kge eval` checks before
importing torch.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError

_BLOCK_ROWS = 1 << 16  # rows checked at once: a bounded temporary whatever the table's size


def nonfinite_rows(table: np.ndarray) -> int:
    """Rows of a 2-D table holding a NaN or an infinity."""
    return sum(int((~np.isfinite(table[i:i + _BLOCK_ROWS])).any(axis=1).sum())
               for i in range(0, len(table), _BLOCK_ROWS))


def refuse_nonfinite(counts: dict[str, int], rows: dict[str, int], where: str) -> None:
    """One error naming each table with non-finite rows (`counts`) and its size (`rows`), if any."""
    bad = [f"{counts[name]:,} of the {rows[name]:,} rows of the {name} table" for name in counts if counts[name]]
    if bad:
        raise InputError(f"{where}: {' and '.join(bad)} are not finite (NaN or infinite): the training diverged, "
                         f"and rankings against such rows mean nothing; train again with a lower --lr (or a "
                         f"smaller --regularization_coef)")


def check_finite(tables: dict[str, np.ndarray], where: str) -> None:
    """Refuse `tables` (name -> rows) if any row is not finite."""
    refuse_nonfinite({n: nonfinite_rows(t) for n, t in tables.items()}, {n: len(t) for n, t in tables.items()},
                     where)
