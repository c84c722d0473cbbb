"""`LocalChannel`: the in-process stand-in for `Connections` used in standalone mode.

Requests go straight to a `RequestHandler` (same validation, same store code), so the
client logic is identical with and without servers.
"""

from __future__ import annotations

from typing import Sequence

from ..rpc.transport import PeerAddress, Reply, Request, remote_error
from .handler import RequestHandler


class LocalChannel:
    """Answers requests synchronously from one in-process store (peer 0)."""

    def __init__(self, handler: RequestHandler):
        self.handler = handler
        self.peers = [PeerAddress(0, 0, "in-process", 0)]

    def start(self, requests: Sequence[Request], timeout: float | None = None) -> list[Reply]:
        replies = []
        for req in requests:
            header, arrays = self.handler({**req.header}, list(req.arrays))
            if not header.get("ok"):
                raise remote_error(self.peers[req.peer], req.header.get("op"), header)
            for i, target in enumerate(req.out[:len(arrays)]):
                if target is not None:  # honour `out` as the network channel does
                    arrays[i] = target.copy_(arrays[i].view(target.shape))
            replies.append(Reply(header, arrays))
        return replies

    def wait(self, batch: list[Reply]) -> list[Reply]:
        return batch

    def call(self, requests: Sequence[Request], timeout: float | None = None) -> list[Reply]:
        return self.start(requests, timeout)

    def close(self) -> None:
        pass
