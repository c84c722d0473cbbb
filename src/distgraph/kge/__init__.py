"""Knowledge-graph embeddings on one machine: DGL-KE's models, flags and file layout.

`train_kge` / `eval_kge` back `distgraph kge train` / `distgraph kge eval`.
"""

from .config import EvalConfig, TrainConfig
from .pipeline import RunResult, eval_kge, train_kge

__all__ = ["EvalConfig", "RunResult", "TrainConfig", "eval_kge", "train_kge"]
