"""The row kernels behind server-side optimisers and large row reads (`kvstore/kernels.py`),
per call of 10k random distinct rows (random rows with repeats for the gather) of 128
float32 values out of 500k: the C kernels, the torch operations used without them, and with
`--numba FILE` the numba kernels of an earlier version (`git show
7981fac:src/distgraph/kvstore/compiled.py > FILE`; needs `pip install numba`). Before each
call 64 MB are written, so every call starts from cold caches, as a server's random rows of a
large table do. The implementations alternate round by round, each going first in turn, and
each figure is the fastest round, so load on a shared machine weighs on all alike. A
process's first call of each is timed apart (numba compiles it then, into an empty cache
folder of this run).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/row_kernels.py [--numba FILE] [--threads 1]

Prints `key: value` lines.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
from functools import partial
import os
import sys
import tempfile
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

import distgraph.kvstore.kernels as kernels  # noqa: E402
from common import report  # noqa: E402

ROWS, DIM, N = 500_000, 128, 10_000


_NUMBA_CACHE = tempfile.TemporaryDirectory(prefix="row_kernels_numba")  # removed at exit


def numba_calls(path: str) -> dict:
    """The kernels of an earlier numba module (`compiled.py`), called as its `kernels.py` did."""
    os.environ["NUMBA_CACHE_DIR"] = _NUMBA_CACHE.name  # compiled from nothing
    spec = importlib.util.spec_from_file_location("compiled_numba", path)
    nb = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(nb)

    def threads():
        nb.use_torch_threads()

    return {
        "adagrad": lambda w, s, r, g: (threads(), nb.adagrad_rows(w.numpy(), s.numpy(), r.numpy(), r.numpy(),
                                                                  g.numpy(), 1e-6, 1e-10)),
        "adam": lambda w, m, v, t, r, g: (threads(), nb.adam_rows(w.numpy(), m.numpy(), v.numpy(), t.numpy(),
                                                                  r.numpy(), r.numpy(), g.numpy(), 1e-6, 0.9, 0.999,
                                                                  1e-8)),
        "row_adagrad": lambda w, s, r, g: nb.row_adagrad_rows(w.numpy(), s.numpy(), r.numpy(), g.numpy(), 1e-6),
        "gather": lambda src, r, out: (torch.aminmax(r), nb.gather(src.numpy(), r.numpy(), out.numpy())),
    }  # (its gather_rows checked the ids' range first, as the C path's does)


def project_calls() -> dict:
    return {
        "adagrad": lambda w, s, r, g: kernels.adagrad(w, s, r, r, g, 1e-6, 1e-10),
        "adam": lambda w, m, v, t, r, g: kernels.adam(w, m, v, t, r, r, g, 1e-6, 0.9, 0.999, 1e-8),
        "row_adagrad": lambda w, s, r, g: kernels.row_adagrad(w, s, r, g, 1e-6),
        "gather": lambda src, r, out: kernels.gather_rows(src, r, out),
    }


EVICT = torch.empty(64 << 20, dtype=torch.uint8)


def ms(fn) -> float:
    """Milliseconds of one call of `fn`, from cold caches."""
    EVICT.fill_(1)
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--numba", help="an earlier compiled.py to compare with")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    gen = torch.Generator().manual_seed(0)
    weight = torch.randn(ROWS, DIM, generator=gen)
    sum_, m, v = torch.zeros(ROWS, DIM), torch.zeros(ROWS, DIM), torch.zeros(ROWS, DIM)
    steps, row_state = torch.zeros(ROWS, dtype=torch.int64), torch.zeros(ROWS)
    rows = torch.randperm(ROWS, generator=gen)[:N].sort().values
    grad = torch.randn(N, DIM, generator=gen) * 1e-2
    ids, out = torch.randint(0, ROWS, (N,), generator=gen), torch.empty(N, DIM)
    arguments = {"adagrad": (weight, sum_, rows, grad), "adam": (weight, m, v, steps, rows, grad),
                 "row_adagrad": (weight, row_state, rows, grad), "gather": (weight, ids, out)}

    impls = {"c": project_calls(), "torch": {k: partial(_without_c, f) for k, f in project_calls().items()}}
    if args.numba:
        impls["numba"] = numba_calls(args.numba)
    report("date", datetime.datetime.now().isoformat(timespec="minutes"))
    report("load_average_1min", os.getloadavg()[0])
    report("threads", args.threads)
    for name, calls in impls.items():
        for kernel, fn in calls.items():
            report(f"first_{kernel}_{name}_ms", ms(lambda: fn(*arguments[kernel])))
    best = {(k, name): float("inf") for k in arguments for name in impls}
    names = list(impls)
    for r in range(args.rounds):
        for kernel in arguments:
            for name in names[r % len(names):] + names[:r % len(names)]:  # each goes first in turn
                best[kernel, name] = min(best[kernel, name], ms(lambda: impls[name][kernel](*arguments[kernel])))
    for (kernel, name), value in best.items():
        report(f"{kernel}_{name}_10k_rows_ms", value)
    if args.numba:
        for kernel in arguments:
            report(f"{kernel}_numba_over_c", best[kernel, "numba"] / best[kernel, "c"])
    report("load_average_1min_end", os.getloadavg()[0])
    return 0


def _without_c(fn, *args) -> None:
    """Call `fn` as on an install without the C kernels."""
    saved = kernels.c_kernels
    kernels.c_kernels = lambda: None
    try:
        fn(*args)
    finally:
        kernels.c_kernels = saved


if __name__ == "__main__":
    sys.exit(main())
