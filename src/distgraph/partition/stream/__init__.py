"""Partitioning graphs one process cannot hold: edges read as a stream, only per-node arrays and
one bucket of edges in memory, the same output format as `partition_graph`."""

from .source import StreamSource, from_array_graph, from_chunked, from_npz, from_ogb_binary, open_source
from .writer import STREAM_METHODS, kaminpar_assign, partition_stream

__all__ = ["STREAM_METHODS", "StreamSource", "from_array_graph", "from_chunked", "from_npz", "from_ogb_binary",
           "kaminpar_assign", "open_source", "partition_stream"]
