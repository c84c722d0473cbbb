"""Training metrics a person can look at: TensorBoard event files and JSON lines."""

from .events import SummaryWriter
from .log import MetricsLog, remote_rows

__all__ = ["MetricsLog", "SummaryWriter", "remote_rows"]
