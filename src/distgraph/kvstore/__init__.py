"""The key-value store behind distributed tensors: shared-memory shards, server-side
sparse optimisers, the server loop and the client that routes rows to their owners."""

from .client import KVClient, TensorHandle
from .server import KVServer
from .store import KVStore, UnknownTensor

__all__ = ["KVClient", "KVServer", "KVStore", "TensorHandle", "UnknownTensor"]
