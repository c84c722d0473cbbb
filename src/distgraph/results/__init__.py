"""Results in the user's ids: layer-wise inference over every node, each trainer's share written
keyed by the input's node ids (Parquet and `.npy`), and `load_results` joining the parts."""

from .inference import layerwise_inference
from .load import load_results
from .save import save_embeddings, save_predictions
from .write import ResultWriter

__all__ = ["ResultWriter", "layerwise_inference", "load_results", "save_embeddings", "save_predictions"]
