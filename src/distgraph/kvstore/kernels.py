"""Row kernels: fused sparse-optimiser updates and a prefetching gather, in C
(`native/rows.c`, compiled with the package), with torch operations where it was built
without them.

An update touches each row's optimiser state and weight once, where the same update in
torch operations takes three random-row passes plus temporaries; rows a few iterations
ahead are prefetched, so their cache and TLB misses overlap instead of queueing (measured
per 10k rows of 128 float32 values, one thread: Adagrad 11.0 ms in torch ops, 3.6 ms fused,
1.45x faster again with prefetching). Updates run on `torch.get_num_threads()` threads (a
server's `--num_server_threads`). Rows must be unique: the caller coalesces them, so
parallel updates never write the same row. Compiled ahead of time, a process's first update
costs what its later ones do.

`gather_rows` copies rows the same way, prefetching ahead, in the calling thread: about
1.5x `torch.index_select` for 4k-100k random 512-byte rows here, slower below ~2k rows
(call overhead), so small requests keep `index_select`. It also writes each row straight
to its place among rows from other sources: a pull of 69k 400-byte rows of two machines'
shared memory took 13-28 ms so, against 23-47 ms sorting the ids by machine, gathering each
machine's rows and scattering them back.
"""

from __future__ import annotations

import math

import torch

from ..native import kernels as c_kernels

GATHER_MIN_ROWS = 2048
GATHER_MIN_ROW_BYTES = 64


def gather_rows(src: torch.Tensor, rows: torch.Tensor, out: torch.Tensor | None = None,
                positions: torch.Tensor | None = None) -> torch.Tensor:
    """`torch.index_select(src, 0, rows, out=out)`, faster for many rows of a contiguous tensor.
    With `positions` (and `out`), row `rows[i]` goes to `out[positions[i]]` instead: the rows of
    one source among others land in place in one pass (no gather into a temporary, then a scatter)."""
    row_bytes = src.element_size() * (src.numel() // max(1, src.shape[0])) if src.dim() else 0
    lib = c_kernels()
    fast = (lib is not None and rows.numel() >= GATHER_MIN_ROWS and row_bytes >= GATHER_MIN_ROW_BYTES
            and src.is_contiguous())
    if positions is not None:
        if out is None or positions.numel() != rows.numel() or tuple(out.shape[1:]) != tuple(src.shape[1:]):
            raise ValueError("gather_rows: positions need an out tensor of rows like src's, one position per row")
        if not fast or not out.is_contiguous() or out.dtype != src.dtype:
            return out.index_copy_(0, positions, torch.index_select(src, 0, rows))
        _check_range(positions, out.shape[0])
    elif not fast:
        return torch.index_select(src, 0, rows, out=out)
    elif out is None:
        out = torch.empty((rows.numel(), *src.shape[1:]), dtype=src.dtype)
    elif out.dtype != src.dtype or tuple(out.shape) != (rows.numel(), *src.shape[1:]) or not out.is_contiguous():
        raise ValueError(f"gather_rows: out must be a contiguous {src.dtype} tensor of shape "
                         f"{[rows.numel(), *src.shape[1:]]}")
    rows = rows.contiguous()
    _check_range(rows, src.shape[0])  # the kernels do not check: never read or write outside
    if positions is None:
        lib.gather_rows(rows.numel(), rows.data_ptr(), src.data_ptr(), row_bytes, out.data_ptr())
    else:
        positions = positions.contiguous()
        lib.gather_rows_at(rows.numel(), rows.data_ptr(), positions.data_ptr(), src.data_ptr(), row_bytes,
                           out.data_ptr())
    return out


def _check_range(index: torch.Tensor, size: int) -> None:
    low, high = (int(v) for v in torch.aminmax(index))
    if low < 0 or high >= size:
        raise IndexError(f"row {low if low < 0 else high} is out of range for {size} rows")


def _rows(t: torch.Tensor) -> torch.Tensor:
    """A contiguous tensor as one row per first index (a view: updates land in place)."""
    return t.view(t.shape[0], math.prod(t.shape[1:]))


def _check(weight: torch.Tensor, values: tuple[torch.Tensor, ...], ids: tuple[torch.Tensor, ...]) -> int:
    """The C kernels read raw memory: every tensor contiguous, `values` of the weight's dtype,
    ids int64. Returns the values in a row."""
    if not all(t.is_contiguous() for t in (weight, *values, *ids)) or any(t.dtype != weight.dtype for t in values) \
            or any(t.dtype != torch.int64 for t in ids):
        raise ValueError(f"row kernels take contiguous tensors: int64 ids, and {weight.dtype} weights, state and "
                         f"gradients")
    return math.prod(weight.shape[1:])


def adagrad(weight: torch.Tensor, state: torch.Tensor, rows: torch.Tensor, state_rows: torch.Tensor,
            grad: torch.Tensor, lr: float, eps: float) -> None:
    """state[s] += g²; weight[r] -= lr · g / (√state[s] + eps), row by row, in place."""
    lib = c_kernels()
    if not rows.numel():
        return
    if lib is None:
        g = _rows(grad)
        total = _rows(state).index_select(0, state_rows).addcmul_(g, g)
        _rows(state).index_copy_(0, state_rows, total)
        _rows(weight).index_add_(0, rows, g / total.sqrt_().add_(eps), alpha=-lr)
        return
    dim = _check(weight, (state, grad), (rows, state_rows))
    lib.adagrad_rows(rows.numel(), rows.data_ptr(), state_rows.data_ptr(), weight.data_ptr(), state.data_ptr(),
                     grad.data_ptr(), dim, weight.element_size(), lr, eps, torch.get_num_threads())


def adam(weight: torch.Tensor, m: torch.Tensor, v: torch.Tensor, steps: torch.Tensor, rows: torch.Tensor,
         state_rows: torch.Tensor, grad: torch.Tensor, lr: float, beta1: float, beta2: float, eps: float) -> None:
    """Lazy Adam with a step count per row, in place (bias corrections in float64)."""
    lib = c_kernels()
    if not rows.numel():
        return
    if lib is None:
        g = _rows(grad)
        t = steps.index_select(0, state_rows) + 1
        steps.index_copy_(0, state_rows, t)
        bc1 = (1 - beta1 ** t.double()).unsqueeze(1)
        bc2 = (1 - beta2 ** t.double()).unsqueeze(1)
        md = _rows(m).index_select(0, state_rows)
        vd = _rows(v).index_select(0, state_rows)
        md.add_(g - md, alpha=1 - beta1)
        vd.add_(g * g - vd, alpha=1 - beta2)
        _rows(m).index_copy_(0, state_rows, md)
        _rows(v).index_copy_(0, state_rows, vd)
        step = md.double() / ((vd.double() / bc2).sqrt_() + eps) / bc1
        _rows(weight).index_add_(0, rows, step.to(weight.dtype), alpha=-lr)
        return
    dim = _check(weight, (m, v, grad), (steps, rows, state_rows))
    lib.adam_rows(rows.numel(), rows.data_ptr(), state_rows.data_ptr(), weight.data_ptr(), m.data_ptr(),
                  v.data_ptr(), steps.data_ptr(), grad.data_ptr(), dim, weight.element_size(), lr, beta1, beta2, eps,
                  torch.get_num_threads())


def row_adagrad(weight: torch.Tensor, state: torch.Tensor, rows: torch.Tensor, grad: torch.Tensor,
                lr: float) -> None:
    """DGL-KE's row-wise Adagrad, in place: state[r] += mean(g²); weight[r] -= lr · g / (√state[r] + 1e-10).
    One float32 accumulator per row (`state` is 1-D), so the state costs 4 bytes a row. Tensors
    on a GPU are updated by torch (the C kernel reads CPU memory)."""
    grad = grad.contiguous()
    lib = c_kernels()
    if not rows.numel():
        return
    if lib is None or weight.device.type != "cpu":
        g = _rows(grad).double()
        total = state.index_select(0, rows).double() + g.square().mean(1)
        state.index_copy_(0, rows, total.float())
        _rows(weight).index_add_(0, rows, (g * (lr / (total.sqrt_() + 1e-10)).unsqueeze(1)).to(weight.dtype),
                                 alpha=-1)
        return
    dim = _check(weight, (grad,), (rows,))
    if state.dtype != torch.float32 or not state.is_contiguous():
        raise ValueError(f"row-wise Adagrad keeps a contiguous float32 state, got {state.dtype}")
    lib.row_adagrad_rows(rows.numel(), rows.data_ptr(), weight.data_ptr(), state.data_ptr(), grad.data_ptr(), dim,
                         weight.element_size(), lr)
