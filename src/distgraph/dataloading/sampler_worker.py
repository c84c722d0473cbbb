"""Entry point of a sampler process (`python -m distgraph.dataloading.sampler_worker`); see
`distributed.sampler_pool` (its trainer's side) and `batch_wire` (what it sends)."""

from __future__ import annotations

import os
from collections import deque

import torch
import zmq

from .. import DistGraph, initialize
from ..cluster.env import ProcessEnv
from ..distributed import exit_client
from ..distributed.runtime import get_context
from ..distributed.sampler_pool import ENDPOINT, worker_audience
from ..rpc.wire import pack, unpack
from .collate import collator_from_spec
from ..errors import DistGraphError
from .batch_wire import encode


def main() -> None:
    torch.set_num_threads(1)
    ctx = zmq.Context()
    sock = ctx.socket(zmq.PAIR)
    env = ProcessEnv.from_environ()
    env.credentials().client(sock, worker_audience(env.rank, env.sampler_id))
    sock.setsockopt(zmq.LINGER, 5000)
    sock.connect(os.environ[ENDPOINT])
    try:
        initialize()
    except Exception as exc:
        sock.send_multipart(pack({"error": f"{type(exc).__name__}: {exc}"}))
        raise
    sock.send_multipart(pack({"ready": True}))  # its lifeline ends this process with its trainer
    client = get_context().client  # the rows each batch pulls from other machines count as its trainer's
    graphs: dict[str, DistGraph] = {}
    collators: dict[int, object] = {}  # spec id -> collator, or the error that building it raised

    def build(spec: dict, arrays: list[torch.Tensor]):
        try:
            name = spec["graph_name"]
            if name not in graphs:
                graphs[name] = DistGraph(name)
            return collator_from_spec(graphs[name], spec, [a.clone() for a in arrays])
        except Exception as exc:  # reported with every batch that names this spec
            return f"{type(exc).__name__}: {exc}"

    pending: deque = deque()  # messages received, not yet handled
    try:
        while True:
            if not pending:
                pending.append(unpack(sock.recv_multipart(copy=False)))
            while sock.poll(0, zmq.POLLIN):  # everything queued: a cancel may void jobs before it
                pending.append(unpack(sock.recv_multipart(copy=False)))
            cancelled = {h["cancel"] for h, _ in pending if "cancel" in h}
            if cancelled:
                pending = deque((h, a) for h, a in pending if "cancel" not in h and h.get("run") not in cancelled)
                continue
            header, arrays = pending.popleft()
            if header.get("stop"):
                break
            if "spec" in header:
                collators[header["spec_id"]] = build(header["spec"], arrays)
                continue
            ids = {"run": header.get("run"), "batch": header.get("batch")}
            try:
                collator = collators[header["spec_id"]]
                if isinstance(collator, str):
                    raise DistGraphError(f"this loader's settings cannot be used here: {collator}")
                generator = torch.Generator().manual_seed(header["seed"])
                before = dict(client.remote_rows)
                out_header, out = encode(collator.collate(arrays[0], generator))
                pulled = {k: n - before.get(k, 0) for k, n in client.remote_rows.items() if n != before.get(k, 0)}
                sock.send_multipart(pack({**ids, **out_header, "remote_rows": pulled}, out))
            except Exception as exc:  # report to the trainer, keep serving
                sock.send_multipart(pack({**ids, "error": f"{type(exc).__name__}: {exc}"}))
    finally:
        exit_client()
        sock.close()
        ctx.term()


if __name__ == "__main__":
    main()
