"""`KVClient`: pull and push rows of named tensors across every machine's servers.

Rows in shared memory this process can reach are read (and assigned) there, without a
request: always this machine's, and those of other machines that run on this host (several
ip_config lines may name one host). Other rows are grouped by the server slot that holds
them, requested from all those servers at once, and scattered back so the result follows
the order of the ids, repeats included. While requests are in flight the rows in shared
memory are copied, so both overlap. Optimiser pushes always go to the servers, which keep
the optimiser state, and are not awaited (DGL's pushes are asynchronous too): their replies
are read later, at the latest before a barrier or any call that must see every update.
"""

from __future__ import annotations

import bisect
import math
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import torch

from ..errors import DistGraphError, InputError
from ..cluster.shm_files import SegmentNamer
from ..rpc.transport import Connections, PeerError, Request
from ..rpc.wire import dtype_name, parse_dtype
from .disk import read_only_error
from .kernels import gather_rows
from .local import LocalChannel
from .routing import slot_bounds, slot_of
from .shm import SharedMemoryError
from .store import KVStore, PolicyResolver, UnknownTensor

# Requests carry at most this many bytes of rows, so that a server works on one piece while
# the next one travels and no message needs a huge fresh buffer. Each piece costs a message
# and a kernel launch: measured on loopback with 512-byte rows, 8 MiB against 2 MiB pieces
# made Adagrad pushes of 10k rows 1.2x and of 100k rows 1.3x faster, 100k-row pulls 1.15x,
# 10k-row pulls alike (1 MiB pieces were slower still).
CHUNK_BYTES = 8 << 20
# Pull requests of at most this many ids ask for each row once (a KGE step's remote rows
# repeat); larger ones are sent as they are: sorting 10k random ids and scattering the
# reply back halved the wire rate of 10k-row pulls.
DEDUPE_MAX_IDS = 4096
# Requests whose arrays (or expected rows) are at most this big may share a message.
MERGE_BYTES = 1 << 20
# Gradient pushes wait in an outbox for the client's next request; beyond this many bytes
# they are sent on their own, and beyond this many such batches unanswered the oldest is
# awaited (bounding what a slow server can queue, and how late an error surfaces).
OUTBOX_BYTES = 8 << 20
PUSHES_IN_FLIGHT = 8

Initializer = dict | Callable[[tuple[int, ...], torch.dtype], torch.Tensor] | None


@dataclass
class TensorHandle:
    """A named tensor as a client sees it: definition, per-machine uid, routing, local rows."""

    name: str
    shape: tuple[int, ...]
    dtype: torch.dtype
    policy: str
    uids: list[str]  # per machine: which creation of the tensor this handle refers to
    bounds: list[int]  # machine row bounds
    slots: torch.Tensor  # (machine, server) slot row bounds
    shm: dict[int, torch.Tensor]  # machine -> its rows, for the machines whose shared memory we map
    machine_id: int
    segments: dict[int, Path] = field(default_factory=dict)  # machine -> `KVStore.witness` of its mapped rows
    namers: dict[int, SegmentNamer] = field(default_factory=dict)  # machine -> names of its shared memory
    on_disk: bool = False  # served read-only from the partition files (`kvstore.disk`): writes are refused

    def check_mapped(self, machines) -> None:
        """Refuse a stale handle before touching mapped rows, as servers refuse stale requests:
        deleting a tensor removes its segment file (or, served from disk, its manifest), and a
        re-created one gets a new file. When none of the machine's files is left, its servers
        have exited (they remove them all)."""
        for m in machines:
            path = self.segments.get(m)
            if path is not None and not path.exists():
                if not self.namers[m].all_files():
                    raise PeerError(f"the servers of machine {m} have exited (its shared memory "
                                    f"{self.namers[m].stem}.* is gone); the job cannot go on without them: "
                                    f"check their output")
                raise UnknownTensor(f"tensor {self.name!r} was deleted or re-created since it was looked up "
                                    f"(machine {m}); look it up again")

    @property
    def local(self) -> torch.Tensor:
        """This machine's rows."""
        return self.shm[self.machine_id]

    @property
    def row_shape(self) -> tuple[int, ...]:
        return tuple(self.shape[1:])


class KVClient:
    """One process's view of the key-value store of a cluster (or of standalone mode)."""

    def __init__(self, channel: Connections | LocalChannel, servers_per_machine: Sequence[int], machine_id: int,
                 local_store: KVStore, resolve_policy: PolicyResolver, slow_timeout: float,
                 host_stores: Sequence[KVStore] = ()):
        """`host_stores`: attach-only stores of other machines that may share this host; a
        tensor's rows there are used when its manifest shows the very creation the servers
        reported (same uid), i.e. when this process sees that machine's shared memory."""
        self.channel = channel
        self.servers_per_machine = list(servers_per_machine)
        self.machine_id = machine_id
        self.local_store = local_store
        self.host_stores = {s.machine_id: s for s in host_stores if s.machine_id != machine_id}
        self.resolve_policy = resolve_policy
        self.slow_timeout = slow_timeout
        self.leaders = [sum(self.servers_per_machine[:m]) for m in range(len(self.servers_per_machine))]
        self.slot_machine = [m for m, n in enumerate(self.servers_per_machine) for _ in range(n)]
        self._slot_machines = torch.tensor(self.slot_machine, dtype=torch.int64)
        self._lock = threading.RLock()
        self._pid = os.getpid()
        self._deferred_deletes: list[str] = []
        self._turn = 0  # round-robin over a machine's servers for `overlap`
        self.remote_rows: dict[str, int] = {}  # tensor -> rows pulled from other machines' servers so far
        self._outbox: list[Request] = []  # gradient pushes not sent yet (see `push`)
        self._outbox_bytes = 0
        self._pushes: list = []  # batches of gradient pushes whose replies have not been read

    @property
    def num_machines(self) -> int:
        return len(self.servers_per_machine)

    def _guard(self) -> threading.RLock:
        if os.getpid() != self._pid:
            raise DistGraphError("the distgraph client was created in another process (fork); "
                                 "call distgraph.initialize() in this process")
        return self._lock

    # ---------------------------------------------------------------- session
    def hello(self, role: str) -> None:
        """Register with every server (waits for them to finish loading)."""
        with self._guard():
            self.channel.call([Request(p, {"op": "hello", "role": role}) for p in range(len(self.channel.peers))],
                              self.slow_timeout)

    def goodbye(self) -> None:
        with self._guard():
            self.flush()
            self.channel.call([Request(p, {"op": "goodbye"}) for p in range(len(self.channel.peers))])

    def barrier(self, parties: int, timeout: float, value=None) -> list:
        """Wait until `parties` clients reached the barrier (held by server 0 of machine 0); returns
        the `value` each of them brought (plain data: None, numbers, strings, lists, maps), in
        the order they arrived."""
        with self._guard():
            self.flush()
            (reply,) = self.channel.call([Request(0, {"op": "barrier", "parties": parties, "value": value})], timeout)
            values = reply.header.get("values")
            if not isinstance(values, list) or len(values) != parties:
                raise DistGraphError(f"the barrier answered with {values!r}, not {parties} values")
            return values

    def shutdown_servers(self) -> None:
        with self._guard():
            self.flush()
            self.channel.call([Request(p, {"op": "shutdown"}) for p in range(len(self.channel.peers))])

    # ----------------------------------------------------------- definitions
    def _handle(self, name: str, shape, dtype: torch.dtype, policy: str, uids: list[str],
                on_disk: bool) -> TensorHandle:
        bounds = [int(b) for b in self.resolve_policy(policy)]
        stores = {self.machine_id: self.local_store, **self.host_stores}
        shards = {self.machine_id: self.local_store.shard(name, uids[self.machine_id])}
        for m, store in self.host_stores.items():
            try:
                shards[m] = store.shard(name, uids[m])
            except (UnknownTensor, SharedMemoryError):  # not in this host's shared memory: its rows travel
                pass
        witnesses = {m: stores[m].witness(s) for m, s in shards.items()}
        mapped = {m: w for m, w in witnesses.items() if w is not None}
        return TensorHandle(name, tuple(shape), dtype, policy, uids, bounds,
                            slot_bounds(bounds, self.servers_per_machine), {m: s.data for m, s in shards.items()},
                            self.machine_id, mapped, {m: stores[m].namer for m in mapped}, on_disk)

    def _leaders_call(self, headers: list[dict], arrays: list[list[torch.Tensor]] | None = None) -> list[dict]:
        arrays = arrays or [[] for _ in headers]
        reqs = [Request(self.leaders[m], h, a) for m, (h, a) in enumerate(zip(headers, arrays)) if h is not None]
        replies = iter(self.channel.call(reqs, self.slow_timeout))
        return [next(replies).header if h is not None else None for h in headers]

    def create(self, name: str, shape: tuple[int, ...], dtype: torch.dtype, policy: str,
               init: Initializer = None) -> tuple[TensorHandle, bool]:
        """Create `name` on every machine, or attach if it exists with the same definition.

        `init` is a server-side initialiser spec, or a callable `init(shape, dtype)` run here
        once per machine that lacks the tensor (DGL's convention: `shape` is that machine's
        rows). Returns the handle and whether this call created the tensor anywhere."""
        with self._guard():
            self.flush()
            bounds = self.resolve_policy(policy)
            if not shape or shape[0] != bounds[-1]:
                raise InputError(f"tensor {name!r}: policy {policy!r} has {bounds[-1]} rows, shape is {list(shape)}")
            base = {"op": "create", "name": name, "shape": list(shape), "dtype": dtype_name(dtype), "policy": policy}
            arrays = None
            if callable(init):
                found = self._leaders_call([{"op": "lookup", "name": name}] * self.num_machines)
                headers, arrays = [], []
                for m, f in enumerate(found):
                    rows = (int(bounds[m + 1] - bounds[m]), *shape[1:])
                    headers.append(base)
                    arrays.append([] if f["found"] else [_init_rows(init, rows, dtype, name)])
            else:
                headers = [{**base, "init": init}] * self.num_machines
            replies = self._leaders_call(headers, arrays)
            handle = self._handle(name, shape, dtype, policy, [r["uid"] for r in replies],
                                  any(r["on_disk"] for r in replies))
            return handle, any(r["created"] for r in replies)

    def lookup(self, name: str) -> TensorHandle | None:
        """The handle of an existing tensor, or None if it does not exist."""
        with self._guard():
            self.flush()
            found = self._leaders_call([{"op": "lookup", "name": name}] * self.num_machines)
            if not any(f["found"] for f in found):
                return None
            if not all(f["found"] for f in found):
                missing = [m for m, f in enumerate(found) if not f["found"]]
                raise DistGraphError(f"tensor {name!r} exists on some machines but not on {missing}; re-create it")
            f = found[0]
            return self._handle(name, f["shape"], parse_dtype(f["dtype"]), f["policy"], [x["uid"] for x in found],
                                any(x["on_disk"] for x in found))

    def list(self) -> list[dict]:
        """Name, shape, dtype and policy of every tensor of this machine's store."""
        with self._guard():
            self.flush()
            (reply,) = self.channel.call([Request(self.leaders[self.machine_id], {"op": "list"})])
            return reply.header["tensors"]

    def delete(self, name: str) -> None:
        with self._guard():
            self._leaders_call([{"op": "delete", "name": name}] * self.num_machines)
            for store in self._stores():
                store.delete(name)

    def schedule_delete(self, name: str) -> None:
        """Delete later, from a safe point (used by finalisers, which may run mid-request)."""
        self._deferred_deletes.append(name)

    def _flush_deletes(self) -> None:
        while self._deferred_deletes:
            self.delete(self._deferred_deletes.pop())

    # ------------------------------------------------------------- pull / push
    def _check_ids(self, h: TensorHandle, ids) -> tuple[torch.Tensor, int, int]:
        if not isinstance(ids, torch.Tensor) or ids.dtype != torch.int64 or ids.dim() != 1:
            raise InputError(f"ids for {h.name!r} must be a 1-D int64 tensor")
        ids = ids.contiguous()
        if not ids.numel():
            return ids, 0, 0
        mn, mx = (int(v) for v in torch.aminmax(ids))
        if mn < 0 or mx >= h.shape[0]:
            bad = mn if mn < 0 else mx
            raise InputError(f"row id {bad} is out of range for tensor {h.name!r} with {h.shape[0]} rows")
        return ids, mn, mx

    def _split(self, h: TensorHandle, ids: torch.Tensor, mn: int, mx: int
               ) -> tuple[torch.Tensor | None, torch.Tensor, list[int]]:
        """Group ids (rows `mn`..`mx`) by slot: (permutation or None if already grouped, grouped
        ids, slot offsets). Ids all of one slot are grouped as they are, with no search."""
        one = _holder(h.slots.tolist(), mn, mx)
        if one is None:
            return self._group(h, ids, slot_of(h.slots, ids))
        return None, ids, [0] * (one + 1) + [ids.numel()] * (len(h.slots) - one - 1)

    def _group(self, h: TensorHandle, ids: torch.Tensor, slot: torch.Tensor
               ) -> tuple[torch.Tensor | None, torch.Tensor, list[int]]:
        """`_split` of ids whose slots are known."""
        order = None
        if ids.numel() > 1 and not bool((slot[1:] >= slot[:-1]).all()):
            order = torch.argsort(slot, stable=True)
            ids = ids[order]
        counts = torch.bincount(slot, minlength=len(h.slots) - 1).tolist()
        offsets = [0]
        for c in counts:
            offsets.append(offsets[-1] + c)
        return order, ids, offsets

    def _shm_spans(self, h: TensorHandle, offsets: list[int]) -> list[tuple[int, int, int]]:
        """(machine, a, b) for every machine whose rows we map and which has ids at grouped
        positions [a, b) (a machine's slots are adjacent)."""
        spans = []
        for m in h.shm:
            first = self.leaders[m]
            a, b = offsets[first], offsets[first + self.servers_per_machine[m]]
            if b > a:
                spans.append((m, a, b))
        return spans

    def _pieces(self, h: TensorHandle, offsets: list[int], skip: set[int]):
        """(slot, start, end) of every request: the grouped span of each slot whose machine is
        not in `skip`, cut into pieces of at most CHUNK_BYTES (a server answers in order)."""
        chunk = max(1, CHUNK_BYTES // max(1, _row_bytes(h)))
        for slot in range(len(offsets) - 1):
            if self.slot_machine[slot] not in skip:
                for s in range(offsets[slot], offsets[slot + 1], chunk):
                    yield slot, s, min(s + chunk, offsets[slot + 1])

    def _machine_of(self, h: TensorHandle, mn: int, mx: int) -> int | None:
        """The machine holding every row in [mn, mx], if one does."""
        return _holder(h.bounds, mn, mx)

    def pull(self, h: TensorHandle, ids: torch.Tensor) -> torch.Tensor:
        """Rows `ids` of the tensor, in the order given (duplicates repeated)."""
        return self.pull_many([(h, ids)])[0]

    def pull_many(self, items: Sequence[tuple[TensorHandle, torch.Tensor]]) -> list[torch.Tensor]:
        """`pull` of several tensors with one round trip."""
        return self.start_pull(items).result()

    def start_pull(self, items: Sequence[tuple[TensorHandle, torch.Tensor]]) -> "PendingPull":
        """Send the requests for rows of several tensors now; `result()` copies the rows in
        shared memory (so writes made there in between are seen), then gathers the replies.
        A server answers one client in order, so the replies reflect this client's earlier
        pushes too: a trainer can ask for its next batch's rows before finishing this one."""
        plans, reqs = [], []
        with self._guard():
            for h, ids in items:
                ids, mn, mx = self._check_ids(h, ids)
                out = torch.empty((ids.numel(), *h.row_shape), dtype=h.dtype)
                only = self._machine_of(h, mn, mx) if ids.numel() else None
                if only in h.shm or not ids.numel():
                    plans.append(_PullPlan(h, out, None, [], [(only, None, ids - h.bounds[only])] if ids.numel()
                                           else []))
                else:
                    plans.append(self._plan_pull(h, ids, mn, mx, only, out, reqs))
            batch, skip = self._start(reqs) if reqs or self._outbox else (None, 0)
            return PendingPull(self, plans, batch, skip)

    def _plan_pull(self, h: TensorHandle, ids: torch.Tensor, mn: int, mx: int, only: int | None,
                   out: torch.Tensor, reqs: list[Request]) -> "_PullPlan":
        """Append the requests of a pull to `reqs`; the plan copies mapped rows straight to their
        places and scatters the replies. Only the ids that travel are grouped by slot; ids (rows
        `mn`..`mx`) all of machine `only`, which is not mapped here, all travel (`_split`)."""
        mapped = []
        if only is not None:
            positions, grouped, offsets = self._split(h, ids, mn, mx)
        else:
            slot = slot_of(h.slots, ids)
            machine = self._slot_machines.index_select(0, slot)
            for m in h.shm:
                at = torch.nonzero(machine == m).flatten()
                if at.numel():
                    mapped.append((m, at, ids.index_select(0, at) - h.bounds[m]))
            far = None  # positions of the ids that travel (None: all of them)
            if mapped:
                travels = torch.ones(self.num_machines, dtype=torch.bool)
                travels[list(h.shm)] = False
                far = torch.nonzero(travels.index_select(0, machine)).flatten()
                ids, slot = ids.index_select(0, far), slot.index_select(0, far)
            order, grouped, offsets = self._group(h, ids, slot)
            positions = far if order is None else order if far is None else far.index_select(0, order)
        spans, row_bytes, travelled = [], _row_bytes(h), 0
        for slot_id, s, e in self._pieces(h, offsets, set(h.shm)):
            asked, repeat = grouped[s:e], None
            if asked.numel() <= DEDUPE_MAX_IDS:  # a row asked for twice travels once
                uniq, inverse = torch.unique(asked, return_inverse=True)
                if uniq.numel() < 0.9 * asked.numel():  # worth scattering the reply back
                    asked, repeat = uniq, inverse
            travelled += asked.numel()
            into = [out[s:e]] if positions is None and repeat is None and (s, e) != (0, out.shape[0]) else []
            header = {"op": "pull", "name": h.name, "uid": h.uids[self.slot_machine[slot_id]]}
            reqs.append(Request(slot_id, header, [asked], into, merge=asked.numel() * row_bytes <= MERGE_BYTES))
            spans.append((s, e, asked.numel(), repeat))
        self.remote_rows[h.name] = self.remote_rows.get(h.name, 0) + travelled
        return _PullPlan(h, out, positions, spans, mapped)

    def push(self, h: TensorHandle, ids: torch.Tensor, values: torch.Tensor, optimizer: dict | None = None) -> None:
        """Assign rows `ids` (done on return), or send them as gradients to the owners'
        `optimizer`. Gradients for rows this process reads through the servers leave with its
        next pull (or barrier, or any call that must see them) and are not awaited: a server
        answers one client in order, so that pull already sees the update. Rows this process
        maps are updated before returning. Tensors served from disk refuse every write."""
        if h.on_disk:
            raise read_only_error(h.name)
        ids, mn, mx = self._check_ids(h, ids)
        if not isinstance(values, torch.Tensor) or tuple(values.shape) != (ids.numel(), *h.row_shape):
            got = list(values.shape) if isinstance(values, torch.Tensor) else type(values).__name__
            raise InputError(f"values for {ids.numel()} rows of {h.name!r} must have shape "
                             f"{[ids.numel(), *h.row_shape]}, got {got}")
        values = values.detach().to(h.dtype).contiguous()
        if not ids.numel():
            return
        only = self._machine_of(h, mn, mx)
        if optimizer is None and only in h.shm:
            h.check_mapped((only,))
            h.shm[only].index_copy_(0, ids - h.bounds[only], values)
            return
        with self._guard():
            order, grouped, offsets = self._split(h, ids, mn, mx)
            if order is not None:
                values = values[order]
            elif optimizer is not None:  # sent while the caller goes on: never the caller's buffers
                grouped, values = grouped.clone(), values.clone()
            direct = set(h.shm) if optimizer is None else set()
            header = {"op": "push", "name": h.name}
            if optimizer is not None:
                header["optimizer"] = optimizer
            row_bytes = _row_bytes(h)
            reqs = [Request(slot, {**header, "uid": h.uids[self.slot_machine[slot]]}, [grouped[s:e], values[s:e]],
                            merge=(e - s) * row_bytes <= MERGE_BYTES)
                    for slot, s, e in self._pieces(h, offsets, direct)]
            if optimizer is not None and not any(self.slot_machine[r.peer] in h.shm for r in reqs):
                # gradients of rows this process reads through the servers: they leave with its
                # next request (in the same message when small), which the server answers after them
                self._outbox.extend(reqs)
                self._outbox_bytes += values.numel() * values.element_size()
                if self._outbox_bytes > OUTBOX_BYTES:
                    self._send_outbox()
                return
            spans_shm = self._shm_spans(h, offsets) if direct else []
            h.check_mapped(m for m, _, _ in spans_shm)
            batch, _ = self._start(reqs)
            for m, a, b in spans_shm:
                h.shm[m].index_copy_(0, grouped[a:b] - h.bounds[m], values[a:b])
            self.channel.wait(batch)  # done on return: this process may read those rows in shared memory next

    def _start(self, reqs: list[Request]) -> tuple[object, int]:
        """Send `reqs` after the gradient pushes of the outbox; the batch, and how many of its
        first replies are the outbox's."""
        sent, self._outbox, self._outbox_bytes = self._outbox, [], 0
        return self.channel.start(sent + reqs), len(sent)

    def _send_outbox(self) -> None:
        """Send the outbox on its own, awaiting the oldest such batches beyond PUSHES_IN_FLIGHT."""
        if self._outbox:
            self._pushes.append(self._start([])[0])
        while len(self._pushes) > PUSHES_IN_FLIGHT:
            self.channel.wait(self._pushes.pop(0))

    def flush(self) -> None:
        """Send the gradient pushes waiting in the outbox and wait until every push of this
        process is applied (raising their errors); run deferred deletes. Done before anything
        that must see every update of this process (barriers, checkpoints, ranking, ...)."""
        self._send_outbox()
        while self._pushes:
            self.channel.wait(self._pushes.pop(0))
        self._flush_deletes()

    def each_server(self, h: TensorHandle, header: Callable[[int], dict]) -> list[tuple[int, dict]]:
        """Send `header(machine)` about tensor `h` to every server of every machine at once;
        (machine, reply header) of each, machine-major. For checkpoints, which every server
        writes and reads its own slice of."""
        with self._guard():
            self.flush()
            reqs = [Request(slot, {**header(m), "name": h.name, "uid": h.uids[m]})
                    for slot, m in enumerate(self.slot_machine)]
            replies = self.channel.call(reqs, self.slow_timeout)
            return [(m, r.header) for m, r in zip(self.slot_machine, replies)]

    def _stores(self) -> tuple[KVStore, ...]:
        """Every store this client maps: this machine's, then those of same-host machines."""
        return (self.local_store, *self.host_stores.values())

    def overlap(self, requests: Sequence[tuple[int, dict, list[torch.Tensor]]],
                local: Callable[[], object]) -> tuple[object, list]:
        """Send each (machine, header, arrays) to one of that machine's servers (spread over
        them in turn), run `local()` while the replies are on their way, then gather them.
        `local()` runs outside the client's lock, so other threads' requests go on meanwhile."""
        if not requests:  # all of it here (standalone, or a host's machines): no lock to take
            self._guard()  # (its check that this process made the client)
            return local(), []
        with self._guard():
            self.flush()
            reqs = []
            for machine, header, arrays in requests:
                self._turn += 1
                reqs.append(Request(self.leaders[machine] + self._turn % self.servers_per_machine[machine],
                                    header, arrays))
            batch = self.channel.start(reqs)
        result = local()
        with self._guard():
            return result, self.channel.wait(batch)

    def close(self) -> None:
        self.channel.close()
        for store in self._stores():
            store.close()


@dataclass
class PendingPull:
    """Rows requested by `KVClient.start_pull`; `result()` once."""

    client: KVClient
    plans: list["_PullPlan"]
    batch: object
    skip: int  # replies to requests sent before the pull's (the outbox's pushes)

    def result(self) -> list[torch.Tensor]:
        self.client._guard()  # refuses a client of another process
        for plan in self.plans:  # outside the lock: other threads' requests go on meanwhile
            plan.h.check_mapped(m for m, _, _ in plan.mapped)
            plan.copy_mapped()
        with self.client._guard():
            replies = iter(self.client.channel.wait(self.batch)[self.skip:] if self.batch is not None else ())
        return [plan.finish([next(replies) for _ in plan.spans]) for plan in self.plans]


@dataclass
class _PullPlan:
    """One tensor's part of a `pull_many`: the spans of its requests over the ids that travel
    (grouped by slot), and the rows of each machine it maps, with their places in the result."""

    h: TensorHandle
    out: torch.Tensor
    positions: torch.Tensor | None  # place in `out` of each id that travels, in request order (None: in order)
    spans: list[tuple[int, int, int, torch.Tensor | None]]  # (start, end, rows asked, where each id's row is)
    mapped: list[tuple[int, torch.Tensor | None, torch.Tensor]]  # (machine, places in `out` or None: all, rows)

    def copy_mapped(self) -> None:
        h, out = self.h, self.out
        for m, at, rows in self.mapped:
            gather_rows(h.shm[m], rows, out, at)

    def finish(self, replies: list) -> torch.Tensor:
        """Scatter the replies into the result."""
        h, out = self.h, self.out
        for (s, e, asked, repeat), rep in zip(self.spans, replies):
            rows = _reply_rows(rep.arrays, asked, h)
            if repeat is not None:
                rows = rows[repeat]
            if self.positions is not None:
                out.index_copy_(0, self.positions[s:e], rows)
            elif (s, e) == (0, out.shape[0]):
                return rows  # one reply holding every row in order is the result itself
            elif rows.data_ptr() != out[s:e].data_ptr():
                out[s:e] = rows
        return out


def _holder(bounds: Sequence[int], mn: int, mx: int) -> int | None:
    """The range of `bounds` (ascending; empty ranges resolve rightwards) holding every id in
    [mn, mx], if one does."""
    at = bisect.bisect_right(bounds, mn) - 1
    return at if mx < bounds[at + 1] else None


def _row_bytes(h: TensorHandle) -> int:
    return torch.empty((), dtype=h.dtype).element_size() * math.prod(h.row_shape)


def _reply_rows(arrays: list[torch.Tensor], n: int, h: TensorHandle) -> torch.Tensor:
    """The rows of a pull reply, checked against what was asked for."""
    if len(arrays) != 1 or arrays[0].dtype != h.dtype or tuple(arrays[0].shape) != (n, *h.row_shape):
        got = [(a.dtype, list(a.shape)) for a in arrays]
        raise DistGraphError(f"a server answered a pull of {n} rows of {h.name!r} with {got}")
    return arrays[0]


def _init_rows(init: Callable, shape: tuple[int, ...], dtype: torch.dtype, name: str) -> torch.Tensor:
    """Run a user initialiser for one machine's rows and check what it returns."""
    rows = init(shape, dtype)
    if not isinstance(rows, torch.Tensor) or tuple(rows.shape) != shape:
        got = list(rows.shape) if isinstance(rows, torch.Tensor) else type(rows).__name__
        raise InputError(f"init_func of {name!r} must return a tensor of shape {list(shape)}, got {got}")
    return rows.detach().to(dtype).contiguous()
