"""Messaging between clients and servers: the wire format and the ZeroMQ transport."""

from .transport import (Connections, PeerAddress, PeerError, RemoteError, RemoteInputError, Reply, Request,
                        ServerSocket)
from .wire import WireError, dtype_name, pack, parse_dtype, unpack

__all__ = ["Connections", "PeerAddress", "PeerError", "RemoteError", "RemoteInputError", "Reply", "Request",
           "ServerSocket", "WireError", "dtype_name", "parse_dtype", "pack", "unpack"]
