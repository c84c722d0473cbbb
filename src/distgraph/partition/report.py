"""A partitioning's statistics (`PartitionStats`, what every partitioner returns) and its report
for a person: `<out>/<graph>-report.json` (per-part nodes, edges, halo nodes and training nodes,
the edge cut, the halo share, the balance) and `<graph>-report.png` (the same per part as bars,
the cut and halo share in the title)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass
class PartitionStats:
    """What a person wants to know about a partitioning (printed by `distgraph partition`)."""

    num_parts: int
    part_nodes: list[int]
    part_edges: list[int]
    part_halo: list[int]
    part_train: list[int]
    edge_cut: float  # fraction of edges whose endpoints are owned by different partitions
    assign_seconds: float
    total_seconds: float

    @property
    def halo_fraction(self) -> float:
        return sum(self.part_halo) / max(1, sum(self.part_nodes))

    @staticmethod
    def imbalance(values: list[int]) -> float:
        """max / mean: 1.0 is perfect balance."""
        mean = sum(values) / len(values)
        return max(values) / mean if mean else 1.0

    def as_dict(self) -> dict:
        d = dict(self.__dict__)
        d["halo_fraction"] = self.halo_fraction
        return d


def report(stats: PartitionStats, graph_name: str, part_method: str) -> dict:
    """The report's content from a `PartitionStats`."""
    imbalance = type(stats).imbalance
    parts = [{"part": p, "nodes": stats.part_nodes[p], "edges": stats.part_edges[p], "halo_nodes": stats.part_halo[p],
              "train_nodes": stats.part_train[p]} for p in range(stats.num_parts)]
    return {"graph_name": graph_name, "part_method": part_method, "num_parts": stats.num_parts, "parts": parts,
            "edge_cut": stats.edge_cut, "halo_share": stats.halo_fraction,
            "balance": {"nodes": imbalance(stats.part_nodes), "edges": imbalance(stats.part_edges),
                        "train_nodes": imbalance(stats.part_train) if sum(stats.part_train) else None},
            "seconds": {"assign": stats.assign_seconds, "total": stats.total_seconds}}


def write_report(out: str | Path, stats: PartitionStats, graph_name: str, part_method: str) -> tuple[Path, Path]:
    """Write the JSON and the PNG beside the partition config; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out)
    content = report(stats, graph_name, part_method)
    json_path, png_path = out / f"{graph_name}-report.json", out / f"{graph_name}-report.png"
    json_path.write_text(json.dumps(content, indent=1))
    series = [("nodes", "owned nodes"), ("edges", "edges"), ("halo_nodes", "halo nodes"), ("train_nodes", "train nodes")]
    fig, axes = plt.subplots(1, len(series), figsize=(3.2 * len(series), 3.2))
    for ax, (key, label) in zip(axes, series):
        ax.bar(range(stats.num_parts), [p[key] for p in content["parts"]], color="tab:blue")
        ax.set_title(label)
        ax.set_xlabel("part")
        ax.set_xticks(range(stats.num_parts))
    fig.suptitle(f"{graph_name}: {part_method}, {stats.num_parts} parts; edge cut {stats.edge_cut:.1%}, "
                 f"halo share {stats.halo_fraction:.1%}")
    fig.tight_layout()
    fig.savefig(png_path, dpi=80)
    plt.close(fig)
    return json_path, png_path
