"""The numba-compiled row loops behind `kernels` (imported on first use: numba and llvmlite
cost ~100 MB and ~0.5 s in a process, which partitioning or a small pull never needs).

Rows a few iterations ahead are prefetched, so their cache and TLB misses overlap instead
of queueing. Threads follow `torch.get_num_threads()` (a server's `--num_server_threads`).
"""

from __future__ import annotations

import os
import threading

import numpy as np
import torch

# workqueue needs no OpenMP runtime beside torch's; our calls never overlap (the store is
# used by one thread at a time), which is all this layer asks.
os.environ.setdefault("NUMBA_THREADING_LAYER", "workqueue")

import numba  # noqa: E402
from llvmlite import ir  # noqa: E402
from numba import types  # noqa: E402
from numba.extending import intrinsic  # noqa: E402

AHEAD = 8  # rows prefetched ahead (4 to 16 measured alike)
_LINE = 64


@intrinsic
def _prefetch_row(typingctx, array, row):
    """Ask the CPU to start loading row `row` of a C-contiguous 2-D array (for writing)."""

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0])
        byte_ptr = ir.IntType(8).as_pointer()
        start = builder.gep(builder.bitcast(data.data, byte_ptr), [builder.mul(args[1], builder.extract_value(
            data.strides, 0))])
        i32 = ir.IntType(32)
        fn = builder.module.declare_intrinsic("llvm.prefetch", fnty=ir.FunctionType(
            ir.VoidType(), [byte_ptr, i32, i32, i32]))
        row_bytes = builder.extract_value(data.strides, 0)
        with builder.goto_entry_block():
            offset = builder.alloca(ir.IntType(64))
        builder.store(ir.Constant(ir.IntType(64), 0), offset)
        loop, done = builder.append_basic_block("prefetch"), builder.append_basic_block("prefetched")
        builder.cbranch(builder.icmp_signed("<", builder.load(offset), row_bytes), loop, done)
        builder.position_at_end(loop)
        at = builder.load(offset)
        builder.call(fn, [builder.gep(start, [at]), i32(1), i32(3), i32(1)])  # write, keep, data
        nxt = builder.add(at, ir.Constant(ir.IntType(64), _LINE))
        builder.store(nxt, offset)
        builder.cbranch(builder.icmp_signed("<", nxt, row_bytes), loop, done)
        builder.position_at_end(done)
        return context.get_dummy_value()

    return types.void(array, row), codegen


@numba.njit(parallel=True, nogil=True, cache=True)
def adagrad_rows(weight, state, rows, state_rows, grad, lr, eps):
    n = rows.shape[0]
    for i in numba.prange(n):
        if i + AHEAD < n:
            _prefetch_row(weight, rows[i + AHEAD])
            _prefetch_row(state, state_rows[i + AHEAD])
        r, s = rows[i], state_rows[i]
        for d in range(weight.shape[1]):
            g = grad[i, d]
            total = state[s, d] + g * g
            state[s, d] = total
            weight[r, d] -= lr * (g / (np.sqrt(total) + eps))


@numba.njit(parallel=True, nogil=True, cache=True)
def adam_rows(weight, m, v, steps, rows, state_rows, grad, lr, beta1, beta2, eps):
    n = rows.shape[0]
    for i in numba.prange(n):
        if i + AHEAD < n:
            _prefetch_row(weight, rows[i + AHEAD])
            _prefetch_row(m, state_rows[i + AHEAD])
            _prefetch_row(v, state_rows[i + AHEAD])
        r, s = rows[i], state_rows[i]
        t = steps[s] + 1
        steps[s] = t
        bc1 = 1.0 - beta1 ** t
        bc2 = 1.0 - beta2 ** t
        for d in range(weight.shape[1]):
            g = grad[i, d]
            md = m[s, d] + (1.0 - beta1) * (g - m[s, d])
            vd = v[s, d] + (1.0 - beta2) * (g * g - v[s, d])
            m[s, d] = md
            v[s, d] = vd
            weight[r, d] -= lr * (md / (np.sqrt(vd / bc2) + eps) / bc1)


@numba.njit(nogil=True, cache=True)
def row_adagrad_rows(weight, state, rows, grad, lr):
    n = rows.shape[0]
    d = weight.shape[1]
    for i in range(n):
        if i + AHEAD < n:
            _prefetch_row(weight, rows[i + AHEAD])
        r = rows[i]
        total = 0.0
        for j in range(d):
            total += grad[i, j] * grad[i, j]
        s = state[r] + total / d
        state[r] = s
        scale = lr / (np.sqrt(s) + 1e-10)
        for j in range(d):
            weight[r, j] -= scale * grad[i, j]


@numba.njit(nogil=True, cache=True)  # serial: as fast here, and no worker thread to wake per call
def gather(src, rows, out):
    n = rows.shape[0]
    for i in range(n):
        if i + AHEAD < n:
            _prefetch_row(src, rows[i + AHEAD])
        r = rows[i]
        for d in range(src.shape[1]):
            out[i, d] = src[r, d]


@numba.njit(nogil=True, cache=True)
def gather_at(src, rows, positions, out):
    n = rows.shape[0]
    for i in range(n):
        if i + AHEAD < n:
            _prefetch_row(src, rows[i + AHEAD])
        r, p = rows[i], positions[i]
        for d in range(src.shape[1]):
            out[p, d] = src[r, d]


_thread = threading.local()  # numba's thread count is per calling thread


def use_torch_threads() -> None:
    """Follow torch's thread count (set only on change: setting it costs the next launch)."""
    want = max(1, min(torch.get_num_threads(), numba.config.NUMBA_NUM_THREADS))
    if getattr(_thread, "count", 0) != want:
        numba.set_num_threads(want)
        _thread.count = want
