"""Graph inputs: `.npz` exchange files, delimited edge lists, PyG and DGL graphs, and seeded
synthetic generators."""

from pathlib import Path

from ..errors import InputError
from ..graph import Graph
from .convert import from_dgl, from_pyg
from .edgelist import load_edgelist
from .mag import generate_mag
from .npz import ZIP_MAGIC, load_npz, save_npz
from .ogb import add_reverse_edges, load_ogb_node
from .sbm import generate_sbm

__all__ = ["load_npz", "save_npz", "load_edgelist", "generate_sbm", "generate_mag", "load_graph", "from_pyg",
           "from_dgl", "load_ogb_node", "add_reverse_edges"]


def load_graph(path: str | Path, **edgelist_kwargs) -> Graph:
    """Load an `.npz` (recognised by its zip signature, whatever the file is called) or a delimited edge list."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"graph file {p} does not exist")
    with open(p, "rb") as f:
        magic = f.read(4)
    if magic in ZIP_MAGIC or p.suffix.lower() == ".npz":
        return load_npz(p)
    return load_edgelist(p, **edgelist_kwargs)
