"""Graph inputs: `.npz` exchange files, delimited edge lists, PyG and DGL graphs, seeded
synthetic generators, and datasets under DGL's and OGB's names read from their downloaded
files (`RedditDataset`, `CoraGraphDataset` and the other citation graphs,
`DglNodePropPredDataset`; never a download). Those that need torch
are imported on first use, so reading an `.npz` or an edge list into an `ArrayGraph`
(`tensors=False`) never imports it."""

from pathlib import Path

from ..array_graph import ArrayGraph, add_reverse_edges
from ..errors import InputError
from ..lazy import lazy_exports
from .edgelist import load_edgelist
from .npz import ZIP_MAGIC, load_npz, save_npz

_EXPORTS = {  # these import torch
    "from_dgl": ".convert:from_dgl", "from_pyg": ".convert:from_pyg", "generate_mag": ".mag:generate_mag",
    "load_ogb_node": ".ogb:load_ogb_node", "generate_sbm": ".sbm:generate_sbm",
    "RedditDataset": ".reddit:RedditDataset", "DglNodePropPredDataset": ".ogb_dataset:DglNodePropPredDataset",
    **{n: f".citation:{n}" for n in ("CitationGraphDataset", "CoraGraphDataset", "CiteseerGraphDataset",
                                     "PubmedGraphDataset")},
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted([*_EXPORTS, "add_reverse_edges", "load_edgelist", "load_graph", "load_npz", "save_npz"])


def load_graph(path: str | Path, *, tensors: bool = True, **edgelist_kwargs) -> ArrayGraph:
    """Load an `.npz` (recognised by its zip signature, whatever the file is called), a folder in
    DGL's chunked format (or its metadata.json), an OGB binary dataset folder (`raw/data.npz`, as
    ogbn-papers100M ships), or a delimited edge list: a `Graph`, or with `tensors=False` an
    `ArrayGraph` of numpy arrays (no torch)."""
    p = Path(path)
    if p.is_dir() and (p / "raw" / "data.npz").is_file():
        from .ogb_binary import load_ogb_binary

        return load_ogb_binary(p, tensors=tensors)
    if p.is_dir() or p.name == "metadata.json":
        from .chunked import load_chunked

        return load_chunked(p, tensors=tensors)
    if not p.is_file():
        raise InputError(f"graph file {p} does not exist")
    with open(p, "rb") as f:
        magic = f.read(4)
    if magic in ZIP_MAGIC or p.suffix.lower() == ".npz":
        return load_npz(p, tensors=tensors)
    return load_edgelist(p, tensors=tensors, **edgelist_kwargs)
