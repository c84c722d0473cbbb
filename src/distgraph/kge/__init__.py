"""Knowledge-graph embeddings, on one machine or a cluster: DGL-KE's models, flags and file layout.

`train_kge` / `eval_kge` back `distgraph kge train` / `distgraph kge eval` (imported on first use).
"""

from ..lazy import lazy_exports

_EXPORTS = {"EvalConfig": ".config:EvalConfig", "TrainConfig": ".config:TrainConfig",
            "RunResult": ".pipeline:RunResult", "eval_kge": ".pipeline:eval_kge", "train_kge": ".pipeline:train_kge",
            "dist_train_kge": ".pipeline:dist_train_kge", "partition_kg": ".data.partition:partition_kg"}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
