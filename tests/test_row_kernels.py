"""The row kernels behind server-side optimisers and large row reads (`kvstore.kernels`): the
C kernels and the torch operations used without them give the same answers as dense torch
references, for float32 and float64 rows of any shape, on one thread or several."""

import pytest
import torch

import distgraph.kvstore.kernels as kernels
from distgraph.native import kernels as c_kernels


@pytest.fixture(params=["c", "torch"])
def path(request, monkeypatch):
    """Each test runs with the C kernels and again as an install without them."""
    if request.param == "c":
        assert c_kernels() is not None, "the C kernels were not built (pip install needs a C compiler)"
    else:
        monkeypatch.setattr(kernels, "c_kernels", lambda: None)
    return request.param


def gradient_steps(rows: int, row_shape: tuple, dtype, steps: int = 4, batch: int = 30, seed: int = 0):
    """(sorted distinct ids, gradients) per step: what a server receives after coalescing."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(steps):
        ids = torch.randperm(rows, generator=gen)[:batch].sort().values
        out.append((ids, torch.randn(batch, *row_shape, generator=gen).to(dtype)))
    return out


@pytest.mark.parametrize("dtype, row_shape", [(torch.float32, (16,)), (torch.float64, (3, 5))])
def test_adagrad_equals_torch_adagrad_on_the_rows_of_a_slice(path, dtype, row_shape):
    """A server holds the state of its slice [lo, lo + 40): state rows are ids - lo."""
    lo, n = 20, 40
    weight = torch.randn(100, *row_shape, generator=torch.Generator().manual_seed(1)).to(dtype)
    state = torch.zeros(n, *row_shape, dtype=dtype)
    dense = torch.nn.Parameter(weight[lo:lo + n].clone())
    ref = torch.optim.Adagrad([dense], lr=0.3, eps=1e-10)
    for ids, grad in gradient_steps(n, row_shape, dtype):
        kernels.adagrad(weight, state, ids + lo, ids, grad, 0.3, 1e-10)
        dense.grad = torch.zeros_like(dense).index_copy_(0, ids, grad)
        ref.step()
    tol = 1e-6 if dtype == torch.float32 else 1e-12
    torch.testing.assert_close(weight[lo:lo + n], dense.detach(), atol=tol, rtol=tol)
    torch.testing.assert_close(state, ref.state[dense]["sum"], atol=tol, rtol=tol)
    assert weight[:lo].abs().sum() > 0 and torch.equal(weight[:lo], torch.randn(
        100, *row_shape, generator=torch.Generator().manual_seed(1)).to(dtype)[:lo])  # other rows untouched


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_adam_counts_steps_per_row_and_equals_torch_adam_on_rows_updated_every_step(path, dtype):
    n, dim = 30, 8
    weight = torch.randn(n, dim, generator=torch.Generator().manual_seed(2)).to(dtype)
    m, v, t = torch.zeros(n, dim, dtype=dtype), torch.zeros(n, dim, dtype=dtype), torch.zeros(n, dtype=torch.int64)
    every = torch.arange(10)  # rows 0-9 get a gradient each step, as a dense torch.optim.Adam's rows do
    dense = torch.nn.Parameter(weight[every].clone())
    ref = torch.optim.Adam([dense], lr=0.01, betas=(0.9, 0.99), eps=1e-8)
    gen = torch.Generator().manual_seed(3)
    for step in range(5):
        ids = torch.cat([every, torch.tensor([12 + step])])  # and one other row once
        grad = torch.randn(ids.numel(), dim, generator=gen).to(dtype)
        kernels.adam(weight, m, v, t, ids, ids, grad, 0.01, 0.9, 0.99, 1e-8)
        dense.grad = grad[:10].clone()
        ref.step()
    tol = 1e-6 if dtype == torch.float32 else 1e-12
    torch.testing.assert_close(weight[every], dense.detach(), atol=tol, rtol=tol)
    assert t.tolist() == [5] * 10 + [0, 0] + [1] * 5 + [0] * 13
    # a row updated once took one whole Adam step: lr * sign(g) (bias-corrected, |g| >> eps)
    start = torch.randn(n, dim, generator=torch.Generator().manual_seed(2)).to(dtype)
    assert torch.allclose(start[12] - weight[12], 0.01 * torch.sign(start[12] - weight[12]), atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_row_adagrad_keeps_one_float32_accumulator_per_row(path, dtype):
    n, dim, lr = 25, 6, 0.5
    weight = torch.randn(n, dim, generator=torch.Generator().manual_seed(4)).to(dtype)
    expected, state = weight.clone().double(), torch.zeros(n)
    acc = torch.zeros(n, dtype=torch.float64)
    for ids, grad in gradient_steps(n, (dim,), dtype, batch=10, seed=5):
        kernels.row_adagrad(weight, state, ids, grad, lr)
        acc[ids] += grad.double().pow(2).mean(1)
        expected[ids] -= lr * grad.double() / (acc[ids].sqrt() + 1e-10).unsqueeze(1)
    torch.testing.assert_close(weight.double(), expected, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(state.double(), acc, atol=1e-6, rtol=1e-6)


def test_updates_on_two_threads_equal_one_thread(path):
    """Enough rows for the C kernels to split them between threads: the same bits."""
    n, dim = 9000, 4
    ids = torch.arange(0, 2 * n, 2)
    grad = torch.randn(n, dim, generator=torch.Generator().manual_seed(6))
    results = []
    threads = torch.get_num_threads()
    try:
        for count in (1, 2):
            torch.set_num_threads(count)
            w, s = torch.ones(2 * n, dim), torch.zeros(2 * n, dim)
            m, v, t = torch.zeros(2 * n, dim), torch.zeros(2 * n, dim), torch.zeros(2 * n, dtype=torch.int64)
            w2 = torch.ones(2 * n, dim)
            kernels.adagrad(w, s, ids, ids, grad, 0.1, 1e-10)
            kernels.adam(w2, m, v, t, ids, ids, grad, 0.1, 0.9, 0.999, 1e-8)
            results.append((w, s, w2, m, v, t))
    finally:
        torch.set_num_threads(threads)
    for one, two in zip(*results):
        assert torch.equal(one, two)
    assert not torch.equal(results[0][0], torch.ones(2 * n, dim))


@pytest.mark.parametrize("dtype, row_shape", [(torch.float32, (32,)), (torch.float16, (4, 16)), (torch.int8, (72,))])
def test_gather_rows_equals_index_select_for_any_dtype(path, dtype, row_shape):
    src = (torch.randn(5000, *row_shape, generator=torch.Generator().manual_seed(7)) * 50).to(dtype)
    rows = torch.randint(0, 5000, (4096,), generator=torch.Generator().manual_seed(8))  # repeats too
    assert torch.equal(kernels.gather_rows(src, rows), torch.index_select(src, 0, rows))
    out = torch.empty(4096, *row_shape, dtype=dtype)
    assert kernels.gather_rows(src, rows, out) is out and torch.equal(out, src[rows])



@pytest.mark.parametrize("rows_per_source", [5, 3000])  # below and above the kernel's minimum
def test_gather_rows_puts_each_sources_rows_in_place(path, rows_per_source):
    gen = torch.Generator().manual_seed(0)
    sources = [torch.randn(4000, 24, generator=gen), torch.randn(3000, 24, generator=gen)]
    owner = torch.randint(0, 2, (2 * rows_per_source,), generator=gen)
    rows = torch.randint(0, 3000, (owner.numel(),), generator=gen)
    expected = torch.stack([sources[o][r] for o, r in zip(owner.tolist(), rows.tolist())])
    out = torch.full_like(expected, float("nan"))
    for m, src in enumerate(sources):
        at = torch.nonzero(owner == m).flatten()
        assert kernels.gather_rows(src, rows[at], out, at) is out
    assert torch.equal(out, expected)
    at, beyond = torch.arange(owner.numel()), rows.clone()
    beyond[-1] = 3000  # of 3000 rows
    with pytest.raises(IndexError, match="out of range|out of bounds"):
        kernels.gather_rows(sources[1], beyond, out, at)
    with pytest.raises(IndexError, match="out of range|out of bounds"):  # places are checked too
        kernels.gather_rows(sources[0], rows, out, at + 1)
    with pytest.raises(ValueError, match="one position per row"):
        kernels.gather_rows(sources[0], rows, out, at[1:])

def test_gather_rows_refuses_rows_out_of_range_and_a_bad_buffer():
    src = torch.zeros(3000, 16)
    with pytest.raises(IndexError, match="row 3000 is out of range for 3000 rows"):
        kernels.gather_rows(src, torch.arange(1, 3001))
    with pytest.raises(ValueError, match="contiguous torch.float32 tensor of shape"):
        kernels.gather_rows(src, torch.arange(3000), torch.empty(3000, 8))


def test_kernels_refuse_tensors_they_cannot_read_as_rows():
    weight, state = torch.zeros(10, 4), torch.zeros(10, 4)
    ids = torch.arange(3)
    with pytest.raises(ValueError, match="contiguous"):
        kernels.adagrad(weight, state, ids, ids, torch.zeros(4, 3).t(), 0.1, 1e-10)
    with pytest.raises(ValueError, match="torch.float32 weights"):
        kernels.adagrad(weight, state, ids, ids, torch.zeros(3, 4, dtype=torch.float64), 0.1, 1e-10)
    with pytest.raises(ValueError, match="float32 state"):
        kernels.row_adagrad(weight, torch.zeros(10, dtype=torch.float64), ids, torch.zeros(3, 4), 0.1)
