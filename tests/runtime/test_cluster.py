"""Two machines on loopback (machine 0 with two servers, machine 1 with one); this test
process is the trainer of machine 0. Rows span partitions; malformed requests get error
replies while the servers keep serving."""

import msgpack
import pytest
import torch
import zmq

from distgraph.errors import InputError
from distgraph.kvstore.initializers import fill
from distgraph.kvstore.shm import SegmentNamer
from distgraph.kvstore.store import KVStore
from distgraph.cluster.ip_config import parse_ip_config, server_addresses
from distgraph.optim import SparseAdagrad, SparseAdam
from distgraph.partition import load_partition
from distgraph.rpc import wire

from .conftest import Cluster, answer_challenge, as_trainer
from .test_kvstore import dense_lazy_adam

N = 2000


@pytest.fixture(scope="module", params=[False, True], ids=["wire", "host-shm"])
def host_shm(request):
    """Whether the trainer reaches machine 1's rows (on this host too) in its shared memory
    or over the wire; each way gets a cluster of its own."""
    return request.param


@pytest.fixture(scope="module")
def cluster(parts, tmp_path_factory, host_shm):
    c = Cluster(parts[2], tmp_path_factory.mktemp("ip") / "ip_config.txt", [2, 1])
    yield c
    codes = c.stop()
    assert all(code == 0 for code in codes.values()), codes  # SIGTERM is a clean exit


@pytest.fixture(scope="module")
def dist(cluster, host_shm):
    with as_trainer(cluster, host_shm=host_shm) as dist:
        yield dist


def test_other_machines_rows_are_mapped_when_they_share_this_host(dist, cluster, truth, host_shm):
    feat = dist.DistTensor((N, 16), torch.float32, "node~_N~feat")
    handle, client = feat._handle, dist.get_context().client
    assert sorted(handle.shm) == ([0, 1] if host_shm else [0])
    lo1, hi1 = dist.get_context().book.node_range(1, "_N")
    if host_shm:
        assert torch.equal(handle.shm[1], truth[lo1:hi1])  # the very rows machine 1's servers hold
    # a store whose manifest is not in our /dev/shm (another host) is not mapped: its rows travel
    elsewhere = KVStore(1, 0, 1, client.resolve_policy, SegmentNamer(cluster.session + "-elsewhere", "g", 1),
                        creator=False)
    saved = client.host_stores
    client.host_stores = {1: elsewhere}
    try:
        assert sorted(client.lookup("node~_N~feat").shm) == [0]
    finally:
        client.host_stores = saved


@pytest.fixture(scope="module")
def truth(parts):
    """Features by (new) node id, straight from the partition files."""
    return torch.cat([load_partition(parts[2], p).node_data["_N"]["feat"] for p in (0, 1)])


def test_pulls_local_remote_and_mixed_keep_order_and_duplicates(dist, truth):
    feat = dist.DistTensor((N, 16), torch.float32, "node~_N~feat")
    lo, hi = dist.get_context().book.node_range(0, "_N")
    cases = {
        "local": torch.tensor([lo, hi - 1, lo, lo + 3]),
        "one remote server": torch.tensor([hi + 5, hi, hi + 5]),
        "mixed, unsorted": torch.tensor([N - 1, 0, hi, 0, N - 1, lo + 1, hi - 1, 17]),
        "mixed, sorted": torch.arange(0, N, 7),
        "random": torch.randint(0, N, (5000,), generator=torch.Generator().manual_seed(1)),
        "empty": torch.tensor([], dtype=torch.int64),
    }
    for what, ids in cases.items():
        assert torch.equal(feat[ids], truth[ids]), what
    with pytest.raises(InputError, match="out of range"):
        feat[torch.tensor([0, N])]


def test_a_row_asked_for_twice_travels_once(dist, truth, host_shm):
    feat = dist.DistTensor((N, 16), torch.float32, "node~_N~feat")
    client = dist.get_context().client
    hi = dist.get_context().book.node_range(0, "_N")[1]
    ids = torch.tensor([hi + 5, 3, hi, hi + 5, hi + 5, hi])
    before = client.remote_rows.get(feat.name, 0)
    assert torch.equal(feat[ids], truth[ids])
    assert client.remote_rows.get(feat.name, 0) - before == (0 if host_shm else 2)


def test_pulled_rows_are_a_private_writable_copy(dist, truth):
    feat = dist.DistTensor((N, 16), torch.float32, "node~_N~feat")
    hi = dist.get_context().book.node_range(0, "_N")[1]
    ids = torch.arange(hi, N)  # machine 1's rows, in order: one reply (wire) or one gather (host-shm)
    rows = feat[ids]
    rows += 1
    assert torch.equal(rows, truth[ids] + 1)
    assert torch.equal(feat[ids], truth[ids])


def test_small_pulls_are_ordinary_tensors(dist):
    feat = dist.DistTensor((N, 16), torch.float32, "node~_N~feat")
    hi = dist.get_context().book.node_range(0, "_N")[1]
    kept = [feat[torch.tensor([hi + i, hi + i + 1])] for i in range(50)]  # one small reply each (wire)
    for rows in kept:  # not views into a bigger receive buffer that they would keep alive
        assert rows.untyped_storage().nbytes() == rows.numel() * rows.element_size()
        assert rows.data_ptr() % rows.element_size() == 0


def test_a_stale_handle_is_refused_on_every_machine(dist):
    from distgraph.errors import InputError

    t = dist.DistTensor((N, 2), torch.float32, "stale", init_func=dist.Constant(1.0), persistent=True)
    client = dist.get_context().client
    old = t._handle
    client.delete("stale")
    dist.DistTensor((N, 2), torch.float32, "stale", init_func=dist.Constant(5.0), persistent=True)
    hi = dist.get_context().book.node_range(0, "_N")[1]
    for ids in (torch.tensor([hi, hi + 1]), torch.tensor([0, 1]), torch.tensor([0, hi])):  # remote, local, mixed
        with pytest.raises(InputError, match="look it up again"):
            client.pull(old, ids)
        with pytest.raises(InputError, match="look it up again"):
            client.push(old, ids, torch.zeros(2, 2))
    assert client.pull(client.lookup("stale"), torch.tensor([0, hi])).eq(5.0).all()
    client.delete("stale")


def test_remote_pulls_cut_into_pieces_reassemble_in_order(dist, truth, monkeypatch):
    import distgraph.kvstore.client as client_module

    monkeypatch.setattr(client_module, "CHUNK_BYTES", 64 * 7)  # 7 rows of 16 float32 per request
    feat = dist.DistTensor((N, 16), torch.float32, "node~_N~feat")
    hi = dist.get_context().book.node_range(0, "_N")[1]
    for ids in (torch.arange(hi, N, 3), torch.randint(0, N, (300,), generator=torch.Generator().manual_seed(2))):
        assert torch.equal(feat[ids], truth[ids])


def test_assignments_span_machines_and_reach_shared_memory(dist, cluster):
    t = dist.DistTensor((N, 3), torch.int64, "counts", init_func=dist.Constant(7), persistent=True)
    ids = torch.tensor([1999, 3, 1000, 999, 0, 1500])
    t[ids] = ids.unsqueeze(1) * torch.tensor([1, 10, 100])
    expected = torch.full((N, 3), 7, dtype=torch.int64)
    expected[ids] = ids.unsqueeze(1) * torch.tensor([1, 10, 100])
    assert torch.equal(t[torch.arange(N)], expected)
    # another process of machine 1 (as a trainer there would) sees machine 1's rows in shared memory
    book = dist.get_context().book
    view = KVStore(1, 0, 1, lambda p: tuple(dist.PartitionPolicy(p, book).bounds),
                   SegmentNamer(cluster.session, "g", 1), creator=False)
    lo1, hi1 = book.node_range(1, "_N")
    assert torch.equal(view.shard("counts").data, expected[lo1:hi1])


def test_uniform_init_does_not_depend_on_the_partitioning(dist):
    t = dist.DistTensor((N, 5), torch.float32, "u", init_func=dist.Uniform(-3, 3, seed=11))
    full = torch.empty(N, 5)
    fill(full, 0, dist.Uniform(-3, 3, seed=11).spec())
    assert torch.equal(t[torch.arange(N)], full)


def test_server_side_optimizers_match_dense_references(dist):
    emb = dist.DistEmbedding(N, 6, "emb_ada", init_func=dist.Normal(0, 0.3, seed=2))
    emb2 = dist.DistEmbedding(N, 6, "emb_adam", init_func=dist.Normal(0, 0.3, seed=2))
    dense = torch.nn.Parameter(emb.weight[torch.arange(N)].clone())
    start2 = emb2.weight[torch.arange(N)]
    ref = torch.optim.Adagrad([dense], lr=0.5, eps=1e-10)
    opt, opt2 = SparseAdagrad([emb], lr=0.5), SparseAdam([emb2], lr=0.05)
    gen = torch.Generator().manual_seed(3)
    steps = []
    for _ in range(4):
        ids = torch.randint(0, N, (800,), generator=gen)  # repeats, every server slot
        weights = torch.randn(800, 6, generator=gen)
        (emb(ids) * weights).sum().backward()
        out2 = emb2(ids)
        (out2 * weights).sum().backward()
        steps.append((ids, out2.grad.clone()))
        opt.step()
        opt2.step()
        ref.zero_grad()
        (dense[ids] * weights).sum().backward()
        ref.step()
    assert torch.allclose(emb.weight[torch.arange(N)], dense.detach(), atol=1e-6)
    assert torch.allclose(emb2.weight[torch.arange(N)], dense_lazy_adam(start2, steps, 0.05, 0.9, 0.999, 1e-8),
                          atol=1e-5)


def test_row_adagrad_matches_a_dense_reference_here_and_on_servers(dist):
    """DGL-KE's row-wise Adagrad: rows of this machine updated in place, others by their server."""
    from distgraph.optim.row_adagrad import RowAdagrad
    from distgraph.optim.sparse import coalesce

    table = dist.DistTensor((N, 6), torch.float32, "kge_rows", init_func=dist.Normal(0, 0.3, seed=4), persistent=True)
    dense, state = table[torch.arange(N)].clone(), torch.zeros(N)
    opt = RowAdagrad(table, lr=0.5)
    gen = torch.Generator().manual_seed(5)
    for _ in range(4):
        ids, grads = coalesce(torch.randint(0, N, (900,), generator=gen), torch.randn(900, 6, generator=gen))
        opt.step(ids, grads)
        state[ids] += grads.pow(2).mean(1)  # the reference, in plain torch
        dense[ids] -= 0.5 * grads / (state[ids].sqrt() + 1e-10).unsqueeze(1)
    assert torch.allclose(table[torch.arange(N)], dense, atol=1e-5)
    assert torch.allclose(opt.state[torch.arange(N)], state, rtol=1e-5)


def test_list_lookup_and_delete(dist):
    client = dist.get_context().client
    names = {t["name"] for t in client.list()}
    assert {"node~_N~feat", "node~_N~label", "counts"} <= names
    assert client.lookup("no-such-tensor") is None
    assert client.lookup("node~_N~feat").shape == (N, 16)
    dist.DistTensor((N,), torch.float32, "temp")
    client.delete("temp")
    assert client.lookup("temp") is None


def _raw(frames_list, peer, credentials):
    """Send raw messages to one server and collect its replies (headers)."""
    sock = zmq.Context.instance().socket(zmq.DEALER)
    credentials.client(sock, peer.audience)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(peer.endpoint)
    replies = []
    try:
        assert answer_challenge(sock, credentials, peer.audience)["ok"]
        for frames in frames_list:
            sock.send_multipart(frames)
            assert sock.poll(60_000), f"no reply to {frames!r:.80}"
            replies.append(wire.unpack(sock.recv_multipart())[0])
    finally:
        sock.close()
    return replies


def _msg(header, *arrays):
    return [bytes(f) for f in wire.pack(header, arrays)]


def _with_raw(header, *payloads):
    return [msgpack.packb(header), *payloads]


@pytest.mark.parametrize("server", [(0, 1), (1, 0)])
def test_every_malformed_request_gets_an_error_reply_and_the_server_keeps_serving(dist, cluster, server):
    dist.DistTensor((N, 16), torch.float32, "node~_N~feat")
    peers = server_addresses(parse_ip_config(cluster.ip_config), 1)
    peer = next(p for p in peers if (p.machine_id, p.server_id) == server)
    lo, hi = dist.get_context().book.node_range(server[0], "_N")
    uid = dist.get_context().client.lookup("node~_N~feat").uids[server[0]]
    own = torch.tensor([lo])
    bad = {
        "garbage bytes": [b"\x00\xff\x13garbage"],
        "header not a map": [msgpack.packb([1, 2, 3])],
        "bad dtype": _with_raw({"op": "pull", "rid": 1, "name": "node~_N~feat",
                                "arrays": [["float128", [1]]]}, b"x" * 16),
        "wrong length": _with_raw({"op": "pull", "rid": 2, "name": "node~_N~feat",
                                   "arrays": [["int64", [2]]]}, b"x" * 9),
        "ids out of range": _msg({"op": "pull", "rid": 3, "name": "node~_N~feat"}, torch.tensor([hi])),
        "negative ids": _msg({"op": "pull", "rid": 3, "name": "node~_N~feat"}, torch.tensor([-5])),
        "float ids": _msg({"op": "pull", "rid": 3, "name": "node~_N~feat"}, torch.tensor([1.0])),
        "unknown tensor": _msg({"op": "pull", "rid": 4, "name": "nope"}, own),
        "stale uid": _msg({"op": "pull", "rid": 4, "name": "node~_N~feat", "uid": "0000"}, own),
        "unknown op": _msg({"op": "format_disk", "rid": 5}),
        "missing name": _msg({"op": "pull", "rid": 6}, own),
        "push values wrong length": _msg({"op": "push", "rid": 7, "name": "node~_N~feat"}, own, torch.zeros(2, 16)),
        "push values wrong dtype": _msg({"op": "push", "rid": 7, "name": "node~_N~feat"}, own,
                                        torch.zeros(1, 16, dtype=torch.float64)),
        "bad optimizer": _msg({"op": "push", "rid": 8, "name": "node~_N~feat",
                               "optimizer": {"kind": "adagrad", "lr": "x"}}, own, torch.zeros(1, 16)),
        "create bad shape": _msg({"op": "create", "rid": 9, "name": "x", "shape": [-1], "dtype": "float32",
                                  "policy": "node~_N"}),
        "create bad policy": _msg({"op": "create", "rid": 9, "name": "x", "shape": [N], "dtype": "float32",
                                   "policy": "node~nope"}),
        "bad barrier": _msg({"op": "barrier", "rid": 10, "parties": "all"}),
        "bad hello": _msg({"op": "hello", "rid": 11, "role": "admin"}),
    }
    good = _msg({"op": "pull", "rid": 99, "name": "node~_N~feat", "uid": uid}, own)
    frames = [m for msg in bad.values() for m in (msg, good)]
    replies = _raw(frames, peer, cluster.credentials)
    for i, what in enumerate(bad):
        err, ok = replies[2 * i], replies[2 * i + 1]
        assert err["ok"] is False and err["error"], what
        assert ok["ok"] is True and ok["rid"] == 99, f"server stopped answering after {what}"
    assert "out of range" not in replies[0]["error"] and "msgpack" in replies[0]["error"]


def test_requests_merged_into_one_message_are_each_answered(dist, cluster):
    """A `many` message: parts run in order, each gets its own reply; a failing part leaves the others."""
    peer = next(p for p in server_addresses(parse_ip_config(cluster.ip_config), 1) if p.machine_id == 1)
    lo = dist.get_context().book.node_range(1, "_N")[0]
    table = dist.DistTensor((N, 3), torch.float32, "merged_rows", persistent=True)
    uid = dist.get_context().client.lookup("merged_rows").uids[1]
    own = torch.tensor([lo, lo + 1])
    before = table[own].clone()
    parts = [{"op": "pull", "name": "merged_rows", "uid": uid},
             {"op": "push", "name": "merged_rows", "uid": uid},
             {"op": "pull", "name": "nope"},
             {"op": "barrier", "parties": 1},  # session ops are not data requests: refused inside
             {"op": "pull", "name": "merged_rows", "uid": uid}]
    arrays = [own, own, before + 7, own, own]
    msg = _msg({"op": wire.MANY, "rid": 1, "parts": parts, "counts": [1, 2, 1, 0, 1]}, *arrays)
    sock = zmq.Context.instance().socket(zmq.DEALER)
    cluster.credentials.client(sock, peer.audience)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(peer.endpoint)
    try:
        assert answer_challenge(sock, cluster.credentials, peer.audience)["ok"]
        sock.send_multipart(msg)
        assert sock.poll(60_000)
        header, out = wire.unpack(sock.recv_multipart())
    finally:
        sock.close()
    assert header["ok"] is True and header["rid"] == 1 and header["counts"] == [1, 0, 0, 0, 1]
    assert [p["ok"] for p in header["parts"]] == [True, True, False, False, True]
    assert "nope" in header["parts"][2]["error"] and "barrier" in header["parts"][3]["error"]
    assert torch.equal(out[0], before) and torch.equal(out[1], before + 7)  # the second pull saw the push
    table[own] = before


@pytest.mark.parametrize("what, header, message", [
    ("counts off", {"parts": [{"op": "ping"}], "counts": [2]}, "do not add up"),
    ("nested", {"parts": [{"op": "many", "parts": [], "counts": []}], "counts": [0]}, "not 'many' again"),
    ("no parts", {"parts": [], "counts": []}, "1 to 64 parts"),
    ("too many parts", {"parts": [{"op": "ping"}] * 65, "counts": [0] * 65}, "1 to 64 parts"),
    ("part not a map", {"parts": [3], "counts": [0]}, "must be requests"),
    ("negative count", {"parts": [{"op": "ping"}], "counts": [-1]}, "must list non-negative integers"),
    ("count not an int", {"parts": [{"op": "ping"}], "counts": [True]}, "must list non-negative integers"),
])
def test_malformed_merged_messages_are_refused(dist, cluster, what, header, message):
    peer = server_addresses(parse_ip_config(cluster.ip_config), 1)[0]
    (reply,) = _raw([_msg({"op": wire.MANY, "rid": 3, **header}, torch.tensor([1]))
                     if what == "counts off" else _msg({"op": wire.MANY, "rid": 3, **header})],
                    peer, cluster.credentials)
    assert reply["ok"] is False and message in reply["error"], what


def test_gradient_pushes_travel_with_the_next_pull_which_sees_them(dist, host_shm):
    """Gradients for another machine's rows are not awaited: they leave with the next pull, in
    the same message, and that pull already sees the update; a refused push fails that pull."""
    from distgraph.rpc import RemoteInputError

    ctx = dist.get_context()
    client = ctx.client
    emb = dist.DistEmbedding(N, 4, "merged_emb", init_func=dist.Normal(0, 1, seed=3))
    hi = ctx.book.node_range(0, "_N")[1]
    remote = torch.tensor([hi, hi + 3])
    spec = {"kind": "adagrad", "lr": 0.5, "eps": 1e-10}
    before = emb.weight[remote].clone()
    sent = []
    start = client.channel.start
    client.channel.start = lambda reqs, timeout=None: sent.append([r.header["op"] for r in reqs]) or start(reqs, timeout)
    try:
        emb.weight.push_rows(remote, torch.ones(2, 4), spec)
        after = emb.weight[remote]
        # adagrad's first step moves each coordinate by lr, against the gradient's sign
        assert torch.allclose(after, before - 0.5, atol=1e-5)
        if not host_shm:  # over the wire: the push waited for the pull and went in the same batch
            assert sent == [["push", "pull"]]
        bad = {"kind": "adagrad", "lr": -1.0, "eps": 1e-10}
        if host_shm:  # rows this process maps: the push is awaited, and refused at once
            with pytest.raises(RemoteInputError, match="lr"):
                emb.weight.push_rows(remote, torch.ones(2, 4), bad)
        else:
            emb.weight.push_rows(remote, torch.ones(2, 4), bad)
            with pytest.raises(RemoteInputError, match="lr"):
                emb.weight[remote]  # the refused push fails the pull it travelled with
    finally:
        client.channel.start = start
