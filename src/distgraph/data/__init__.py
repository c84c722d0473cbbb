"""Graph inputs: `.npz` exchange files, delimited edge lists and seeded synthetic generators."""

from .edgelist import load_edgelist
from .mag import generate_mag
from .npz import load_npz, save_npz
from .sbm import generate_sbm

__all__ = ["load_npz", "save_npz", "load_edgelist", "generate_sbm", "generate_mag", "load_graph"]


def load_graph(path: str, **edgelist_kwargs):
    """Load a graph by file extension: `.npz` or a delimited edge list (`.csv`, `.tsv`, `.txt`)."""
    if str(path).endswith(".npz"):
        return load_npz(path)
    return load_edgelist(path, **edgelist_kwargs)
