"""Partitioning graphs one process cannot hold: edges read as a stream, only per-node arrays and
one bucket of edges in memory, the same output format as `partition_graph` (names imported on
first use: opening an input does not load the writer)."""

from ...lazy import lazy_exports

_EXPORTS = {
    "StreamSource": ".source:StreamSource", "from_array_graph": ".source:from_array_graph",
    "from_chunked": ".source:from_chunked", "from_npz": ".source:from_npz",
    "from_ogb_binary": ".source:from_ogb_binary", "open_source": ".source:open_source",
    "STREAM_METHODS": ".writer:STREAM_METHODS", "kaminpar_assign": ".writer:kaminpar_assign",
    "partition_stream": ".writer:partition_stream",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
