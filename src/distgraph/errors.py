"""Exceptions that carry one clear, user-facing message naming the culprit and the fix."""


class DistGraphError(Exception):
    """Base class: the command line prints its message alone, without a traceback."""


class InputError(DistGraphError):
    """Input data (a file, an array, an argument) is missing, malformed or inconsistent."""


class PartitionError(DistGraphError):
    """A partitioning request cannot be satisfied or a partition on disk is inconsistent."""
