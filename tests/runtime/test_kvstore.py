"""The store on its own: shared memory, validation, initialisers and server-side optimisers
(checked against dense references on the same gradients)."""

import numpy as np
import pytest
import torch

from distgraph.errors import DistGraphError, InputError
from distgraph.kvstore import initializers
from distgraph.kvstore.shm import SHM_DIR, SegmentNamer
from distgraph.kvstore.store import KVStore, UnknownTensor
from distgraph.optim.sparse import coalesce

from leaks import new_session, shm_entries

BOUNDS = (0, 6, 10)  # machine 0 holds rows 0..5, machine 1 rows 6..9


def resolve(policy):
    if policy != "node~_N":
        raise InputError(f"unknown policy {policy!r}")
    return BOUNDS


def private_store(machine_id=0, num_servers=1, server_id=0):
    return KVStore(machine_id, server_id, num_servers, resolve, None, creator=True)


def test_uniform_and_normal_do_not_depend_on_partitioning():
    for spec in ({"kind": "uniform", "low": -2.0, "high": 3.0, "seed": 7},
                 {"kind": "normal", "mean": 1.0, "std": 0.5, "seed": 7}):
        full = torch.empty(10, 3)
        initializers.fill(full, 0, spec)
        part = torch.empty(4, 3)
        initializers.fill(part, 6, spec)
        assert torch.equal(part, full[6:])
    big = torch.empty(20000)
    initializers.fill(big, 0, {"kind": "normal", "mean": 1.0, "std": 0.5, "seed": 1})
    assert abs(big.mean() - 1.0) < 0.02 and abs(big.std() - 0.5) < 0.02
    initializers.fill(big, 0, {"kind": "uniform", "low": -2.0, "high": 3.0, "seed": 1})
    assert big.min() >= -2.0 and big.max() < 3.0 and abs(big.mean() - 0.5) < 0.05


@pytest.mark.parametrize("spec", [{"kind": "magic"}, {"kind": "uniform", "low": 1, "high": 0, "seed": 0},
                                  {"kind": "normal", "mean": 0, "std": 1}, {"kind": "constant", "value": "x"},
                                  {"kind": "uniform", "low": 0, "high": 1, "seed": -1}])
def test_bad_initializer_specs(spec):
    with pytest.raises(InputError):
        initializers.check_spec(spec)


def test_pull_push_keep_order_and_duplicates():
    store = private_store(machine_id=1)
    meta, created = store.create("t", (10, 2), torch.float32, "node~_N", {"kind": "constant", "value": 1.5})
    assert created and meta.rows == 4
    again, created = store.create("t", (10, 2), torch.float32, "node~_N")
    assert not created and again.uid == meta.uid
    store.push("t", meta.uid, torch.tensor([9, 6]), torch.tensor([[9.0, 9.5], [6.0, 6.5]]))
    rows = store.pull("t", meta.uid, torch.tensor([6, 9, 6, 7]))
    assert rows.tolist() == [[6.0, 6.5], [9.0, 9.5], [6.0, 6.5], [1.5, 1.5]]


@pytest.mark.parametrize("call, message", [
    (lambda s, u: s.pull("nope", None, torch.tensor([0])), "does not exist"),
    (lambda s, u: s.pull("t", u, torch.tensor([6])), "not on machine 0"),
    (lambda s, u: s.pull("t", u, torch.tensor([-1])), "not on machine 0"),
    (lambda s, u: s.pull("t", u, torch.tensor([0], dtype=torch.int32)), "1-D int64"),
    (lambda s, u: s.pull("t", "stale", torch.tensor([0])), "re-created"),
    (lambda s, u: s.push("t", u, torch.tensor([0, 1]), torch.zeros(1, 2)), "shape"),
    (lambda s, u: s.push("t", u, torch.tensor([0]), torch.zeros(1, 2, dtype=torch.float64)), "float32"),
    (lambda s, u: s.push("t", u, torch.tensor([0]), torch.zeros(1, 2), {"kind": "sgd", "lr": 1}), "kind"),
    (lambda s, u: s.push("t", u, torch.tensor([0]), torch.zeros(1, 2), {"kind": "adagrad", "lr": 1}), "exactly"),
    (lambda s, u: s.push("t", u, torch.tensor([0]), torch.zeros(1, 2),
                         {"kind": "adam", "lr": 1, "beta1": 1.5, "beta2": 0.9, "eps": 1e-8}), "betas"),
    (lambda s, u: s.create("t", (10, 3), torch.float32, "node~_N"), "already exists"),
    (lambda s, u: s.create("u", (11, 2), torch.float32, "node~_N"), "must have 10 rows"),
    (lambda s, u: s.create("u", (10, 2), torch.float32, "edge~x"), "unknown policy"),
    (lambda s, u: s.create("u", (10, 2), torch.float32, "node~_N", data=torch.zeros(5, 2)), "initial rows"),
])
def test_invalid_requests_raise_clear_errors(call, message):
    store = private_store()
    meta, _ = store.create("t", (10, 2), torch.float32, "node~_N")
    with pytest.raises(InputError, match=message):
        call(store, meta.uid)


def test_optimizer_only_on_the_servers_own_slice_and_float_tensors():
    store = private_store(num_servers=2, server_id=0)  # rows 0..2 are this server's, 3..5 the other's
    meta, _ = store.create("t", (10, 2), torch.float32, "node~_N")
    spec = {"kind": "adagrad", "lr": 0.1, "eps": 1e-10}
    store.push("t", meta.uid, torch.tensor([0, 2]), torch.ones(2, 2), spec)
    with pytest.raises(InputError, match="another server"):
        store.push("t", meta.uid, torch.tensor([3]), torch.ones(1, 2), spec)
    ints, _ = store.create("i", (10,), torch.int64, "node~_N")
    with pytest.raises(InputError, match="floating point"):
        store.push("i", ints.uid, torch.tensor([0]), torch.ones(1, dtype=torch.int64), spec)


def test_shared_memory_create_attach_recreate_and_cleanup():
    session = new_session()
    creator = KVStore(0, 0, 2, resolve, SegmentNamer(session, "g", 0), creator=True)
    other = KVStore(0, 1, 2, resolve, SegmentNamer(session, "g", 0), creator=False)
    meta, _ = creator.create("emb", (10, 4), torch.float32, "node~_N", {"kind": "constant", "value": 2.0})
    files = [f for f in SHM_DIR.glob(f"*{session}*")]
    assert len(files) == 2 and all(f.stat().st_mode & 0o777 == 0o600 for f in files)  # segment, manifest: private
    assert other.pull("emb", meta.uid, torch.tensor([5, 0])).eq(2.0).all()
    creator.push("emb", meta.uid, torch.tensor([1]), torch.full((1, 4), 7.0))
    assert other.pull("emb", meta.uid, torch.tensor([1])).eq(7.0).all()  # same memory
    assert creator.delete("emb")
    meta2, created = creator.create("emb", (10, 4), torch.float32, "node~_N")
    assert created and meta2.uid != meta.uid
    assert other.pull("emb", meta2.uid, torch.tensor([1])).eq(0.0).all()  # re-attached to the new one
    with pytest.raises(UnknownTensor):
        other.pull("emb", meta.uid, torch.tensor([1]))
    other.close()
    creator.close()
    assert not [f for f in shm_entries() if session in f]


def _steps(seed=0, steps=4, n=10, batch=12, dim=3):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randint(0, n, (batch,), generator=g), torch.randn(batch, dim, generator=g)) for _ in range(steps)]


def test_server_side_adagrad_equals_dense_torch_adagrad():
    store = private_store()
    meta, _ = store.create("w", (10, 3), torch.float32, "node~_N", {"kind": "uniform", "low": -1, "high": 1, "seed": 3})
    dense = torch.nn.Parameter(store.pull("w", meta.uid, torch.arange(6)).clone())
    ref = torch.optim.Adagrad([dense], lr=0.3, eps=1e-10)
    for ids, grad in _steps():
        ids = ids % 6  # machine 0's rows
        store.push("w", meta.uid, *coalesce(ids, grad), {"kind": "adagrad", "lr": 0.3, "eps": 1e-10})
        ref.zero_grad()
        dense.grad = torch.zeros_like(dense).index_add_(0, ids, grad)
        ref.step()
    assert torch.allclose(store.pull("w", meta.uid, torch.arange(6)), dense.detach(), atol=1e-6)


def dense_lazy_adam(w, steps, lr, b1, b2, eps):
    """Reference: per-row step counts, rows without gradient untouched (DGL's SparseAdam)."""
    w = w.clone().double()
    m, v, t = torch.zeros_like(w), torch.zeros_like(w), torch.zeros(w.shape[0], dtype=torch.float64)
    for ids, grad in steps:
        g = torch.zeros_like(w).index_add_(0, ids, grad.double())
        hit = torch.zeros(w.shape[0], dtype=torch.bool)
        hit[ids] = True
        t = t + hit
        m = torch.where(hit[:, None], b1 * m + (1 - b1) * g, m)
        v = torch.where(hit[:, None], b2 * v + (1 - b2) * g * g, v)
        tt = t.clamp(min=1)[:, None]
        upd = lr * (m / (1 - b1 ** tt)) / ((v / (1 - b2 ** tt)).sqrt() + eps)
        w = torch.where(hit[:, None], w - upd, w)
    return w.float()


def test_server_side_adam_equals_dense_reference_with_duplicates_summed_by_the_server():
    store = private_store()
    meta, _ = store.create("w", (10, 3), torch.float32, "node~_N", {"kind": "normal", "mean": 0, "std": 1, "seed": 5})
    start = store.pull("w", meta.uid, torch.arange(6))
    steps = [(ids % 6, grad) for ids, grad in _steps(seed=1)]
    spec = {"kind": "adam", "lr": 0.05, "beta1": 0.9, "beta2": 0.99, "eps": 1e-8}
    for ids, grad in steps:
        store.push("w", meta.uid, ids, grad, spec)  # raw duplicates: the store coalesces them
    expected = dense_lazy_adam(start, steps, 0.05, 0.9, 0.99, 1e-8)
    assert torch.allclose(store.pull("w", meta.uid, torch.arange(6)), expected, atol=1e-5)


def test_coalesce_sums_duplicates_and_sorts():
    ids, grads = coalesce(torch.tensor([3, 1, 3, 0]), torch.tensor([[1.0], [2.0], [4.0], [8.0]]))
    assert ids.tolist() == [0, 1, 3] and grads.flatten().tolist() == [8.0, 2.0, 5.0]
    ids, grads = coalesce(torch.tensor([2, 0]), torch.tensor([[1.0], [2.0]]))
    assert ids.tolist() == [0, 2] and grads.flatten().tolist() == [2.0, 1.0]


def test_tensor_larger_than_free_shared_memory_is_refused():
    store = KVStore(0, 0, 1, lambda p: (0, 10), SegmentNamer(new_session(), "g", 0), creator=True)
    with pytest.raises(DistGraphError, match="GiB of shared memory"):
        store.create("huge", (10, 1 << 40), torch.float32, "node~_N")
    store.close()



def test_rows_served_from_a_npy_file_are_mapped_read_only_from_its_data(tmp_path):
    rows = np.arange(24, dtype=np.float16).reshape(6, 4)
    np.save(tmp_path / "rows.npy", rows)
    session = new_session()
    creator = KVStore(0, 0, 1, resolve, SegmentNamer(session, "g", 0), creator=True)
    other = KVStore(0, 0, 1, resolve, SegmentNamer(session, "g", 0), creator=False)
    meta, _ = creator.create("feat", (10, 4), torch.float16, "node~_N", file=tmp_path / "rows.npy")
    assert (meta.file, meta.offset, meta.segment) == (str(tmp_path / "rows.npy"), 128, "")
    assert [f.suffix for f in SHM_DIR.glob(f"*{session}*")] == [".json"]  # a manifest, no copy of the rows
    assert torch.equal(other.pull("feat", meta.uid, torch.tensor([5, 0, 5])), torch.from_numpy(rows[[5, 0, 5]]))
    for write in (lambda s: s.push("feat", meta.uid, torch.tensor([1]), torch.zeros(1, 4, dtype=torch.float16)),
                  lambda s: s.push("feat", meta.uid, torch.tensor([1]), torch.zeros(1, 4, dtype=torch.float16),
                                   {"kind": "adagrad", "lr": 0.1, "eps": 1e-10}),
                  lambda s: s.load_pieces("feat", meta.uid, tmp_path, [], apply=True)):
        for store in (creator, other):
            with pytest.raises(InputError, match="'feat' is read-only: it is served from the partition's files"):
                write(store)
    assert torch.equal(other.pull("feat", meta.uid, torch.arange(6)), torch.from_numpy(rows))
    with pytest.raises(InputError, match=r"holds float16 \[6, 4\], expected torch.float32 \[6, 4\]"):
        creator.create("wrong", (10, 4), torch.float32, "node~_N", file=tmp_path / "rows.npy")
    manifest = creator.namer.manifest("feat")
    manifest.write_text(manifest.read_text().replace(str(tmp_path), "relative"))
    with pytest.raises(DistGraphError, match="is corrupt"):
        KVStore(0, 0, 1, resolve, SegmentNamer(session, "g", 0), creator=False).shard("feat")
    assert creator.delete("feat") and not list(SHM_DIR.glob(f"*{session}*"))
    other.close()
    creator.close()


def test_a_file_shorter_than_its_rows_is_refused_on_attach(tmp_path):
    np.save(tmp_path / "rows.npy", np.zeros((6, 4), dtype=np.float32))
    session = new_session()
    creator = KVStore(0, 0, 1, resolve, SegmentNamer(session, "g", 0), creator=True)
    meta, _ = creator.create("feat", (10, 4), torch.float32, "node~_N", file=tmp_path / "rows.npy")
    with open(tmp_path / "rows.npy", "r+b") as f:  # replaced while the job runs (never read by the creator again)
        f.truncate(meta.offset + 10)
    with pytest.raises(DistGraphError, match="it changed since its server mapped it"):
        KVStore(0, 0, 1, resolve, SegmentNamer(session, "g", 0), creator=False).shard("feat")
    creator.close()


def test_the_range_holding_every_id_skips_empty_ranges_and_refuses_spans():
    from distgraph.kvstore.client import _holder

    bounds = [0, 5, 5, 10, 12]  # range 1 is empty
    assert _holder(bounds, 0, 4) == 0
    assert _holder(bounds, 5, 9) == 2  # equal bounds resolve rightwards, as slot_of does
    assert _holder(bounds, 10, 11) == 3
    assert _holder(bounds, 4, 5) is None  # spans ranges 0 and 2
    assert _holder(bounds, 9, 10) is None
