"""A partitioning's statistics (`PartitionStats`, what every partitioner returns) and its report
for a person: `<out>/<graph>-report.json` (per-part nodes, edges, halo nodes and training nodes,
the edge cut, the halo share, the balance) and `<graph>-report.svg` (the same per part as bars,
the cut and halo share in the title). The picture is SVG written as text: drawing it costs a
millisecond where importing a plotting library cost the command a fifth of a second or more,
and any browser shows it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from html import escape


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


SERIES = (("nodes", "owned nodes"), ("edges", "edges"), ("halo_nodes", "halo nodes"), ("train_nodes", "train nodes"))
PANEL, MARGIN, TOP = 240, 36, 48  # pixels: a panel's side, its margins, the title band


def _svg(content: dict, title: str) -> str:
    """Bar charts of the per-part counts, one panel a series, as an SVG document."""
    parts = content["parts"]
    width = len(SERIES) * (PANEL + MARGIN) + MARGIN
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{TOP + PANEL + 2 * MARGIN}" '
           f'font-family="sans-serif" font-size="12">', '<rect width="100%" height="100%" fill="white"/>',
           f'<text x="{width / 2}" y="24" text-anchor="middle" font-size="14">{escape(title)}</text>']
    for i, (key, label) in enumerate(SERIES):
        x0, y0 = MARGIN + i * (PANEL + MARGIN), TOP + MARGIN
        values = [p[key] for p in parts]
        top = max(max(values), 1)
        bar = PANEL / max(len(values), 1)
        out.append(f'<text x="{x0 + PANEL / 2}" y="{y0 - 8}" text-anchor="middle">{escape(label)} (max {top:,})'
                   f'</text>')
        out.append(f'<line x1="{x0}" y1="{y0 + PANEL}" x2="{x0 + PANEL}" y2="{y0 + PANEL}" stroke="black"/>')
        for p, v in enumerate(values):
            h = PANEL * v / top
            out.append(f'<rect x="{x0 + p * bar + bar * 0.1:.1f}" y="{y0 + PANEL - h:.1f}" width="{bar * 0.8:.1f}" '
                       f'height="{h:.1f}" fill="#1f77b4"><title>part {p}: {v:,}</title></rect>')
            if len(values) <= 32:
                out.append(f'<text x="{x0 + (p + 0.5) * bar:.1f}" y="{y0 + PANEL + 14}" text-anchor="middle">{p}</text>')
        out.append(f'<text x="{x0 + PANEL / 2}" y="{y0 + PANEL + 30}" text-anchor="middle">part</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def write_report(out: str | Path, stats: PartitionStats, graph_name: str, part_method: str) -> tuple[Path, Path]:
    """Write the JSON and the SVG beside the partition config; returns their paths."""
    out = Path(out)
    content = report(stats, graph_name, part_method)
    json_path, svg_path = out / f"{graph_name}-report.json", out / f"{graph_name}-report.svg"
    json_path.write_text(json.dumps(content, indent=1))
    svg_path.write_text(_svg(content, f"{graph_name}: {part_method}, {stats.num_parts} parts; edge cut "
                                      f"{stats.edge_cut:.1%}, halo share {stats.halo_fraction:.1%}"))
    return json_path, svg_path
