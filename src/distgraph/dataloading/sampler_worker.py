"""Entry point of a sampler process (`python -m distgraph.dataloading.sampler_worker`); see `workers`."""

from __future__ import annotations

import json
import os

import torch
import zmq

from .. import DistGraph, initialize
from ..cluster.env import ProcessEnv
from ..distributed import exit_client
from ..rpc.wire import pack, unpack
from .collate import collator_from_spec
from .workers import ENDPOINT, SPEC, encode


def main() -> None:
    torch.set_num_threads(1)
    ctx = zmq.Context()
    sock = ctx.socket(zmq.PAIR)
    ProcessEnv.from_environ().credentials().client(sock)
    sock.setsockopt(zmq.LINGER, 5000)
    sock.connect(os.environ[ENDPOINT])
    try:
        spec = json.loads(os.environ[SPEC])
        initialize()
        collator = collator_from_spec(DistGraph(spec["graph_name"]), spec)
    except Exception as exc:
        sock.send_multipart(pack({"error": f"{type(exc).__name__}: {exc}"}))
        raise
    sock.send_multipart(pack({"ready": True}))  # its lifeline ends this process with its trainer
    try:
        while True:
            header, arrays = unpack(sock.recv_multipart(copy=False))
            if header.get("stop"):
                break
            ids = {"run": header.get("run"), "batch": header.get("batch")}
            try:
                generator = torch.Generator().manual_seed(header["seed"])
                out_header, out = encode(collator.collate(arrays[0], generator))
                sock.send_multipart(pack({**ids, **out_header}, out))
            except Exception as exc:  # report to the trainer, keep serving
                sock.send_multipart(pack({**ids, "error": f"{type(exc).__name__}: {exc}"}))
    finally:
        exit_client()
        sock.close()
        ctx.term()


if __name__ == "__main__":
    main()
