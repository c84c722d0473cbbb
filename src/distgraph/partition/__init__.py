"""Partitioning: METIS/random assignment, relabelling to contiguous ranges, the on-disk
format, the range partition book and the partition loader."""

from .assign import split_categories
from .book import RangePartitionBook
from .reader import Partition, load_partition, load_partition_book
from .writer import PartitionStats, partition_graph

__all__ = ["partition_graph", "load_partition", "load_partition_book", "RangePartitionBook", "Partition",
           "PartitionStats", "split_categories"]
