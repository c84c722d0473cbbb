"""Partitioning across the hosts of an ip_config: each host reads its share of a chunked
graph's edges, edges travel to the hosts that write their parts, and each host writes its own
(names imported on first use, so a host's process does not load the coordinator's modules)."""

from ...lazy import lazy_exports

_EXPORTS = {"partition_cluster": ".coordinator:partition_cluster"}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
