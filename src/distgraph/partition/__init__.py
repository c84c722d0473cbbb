"""Partitioning: METIS/random assignment, relabelling to contiguous ranges, the on-disk
format, the range partition book and the partition loader (names imported on first use)."""

from ..lazy import lazy_exports

_EXPORTS = {
    "split_categories": ".assign:split_categories", "RangePartitionBook": ".book:RangePartitionBook",
    "Partition": ".reader:Partition", "load_partition": ".reader:load_partition",
    "load_partition_book": ".reader:load_partition_book", "PartitionStats": ".report:PartitionStats",
    "partition_graph": ".writer:partition_graph",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
