"""Partitioning across the hosts of an ip_config: each host reads its share of a chunked
graph's edges, edges travel to the hosts that write their parts, and each host writes its own."""

from .coordinator import partition_cluster

__all__ = ["partition_cluster"]
