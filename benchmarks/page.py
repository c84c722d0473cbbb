"""Render docs/benchmarks.md, and a plot per benchmark that asks for one, from the benchmarks'
JSON records: `benchmarks/results/<name>.json` (tracked), replaced first by any newer
`bench-out/<name>.json` a `make bench` run wrote. The page shows the current figures only;
their history is the history of the JSON files in git.

The page opens with one table of distgraph against its peers (DGL 2.1.0, DGL-KE 0.1.2,
PyTorch-BigGraph), built from the records that hold such figures; then every record's own table,
grouped by what it measures. A figure is scored against a target ("met" or "missed") only from
at least 3 rounds: the median of the rounds' ratios (or figures) against the target, printed with
the range of the rounds; a figure with fewer rounds, or set against a recorded figure of another
run, is printed as "not scored"."""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEADER = """# Benchmarks

How distgraph compares with DGL 2.1.0 and DGL-KE 0.1.2 on the same input in the same run, then
every benchmark's own table with its command, machine, date and peer. Each target is scored on
the median of at least 3 rounds' ratios (a round runs ours and the peer back to back), printed
with the rounds' range; a figure of fewer rounds is printed as "not scored".
"""
FOOTER = """
This page is generated from `benchmarks/results/*.json` by `make bench-page` (`make bench` runs
the benchmarks first and records their figures there); earlier figures are in the git history
of those records. Absolute times on the shared 2-core machine are noisy; ratios are taken
within one run.
"""

# sections of the details, in page order: (heading, record names); records not named here follow
# under "Other figures", in their records' order
GROUPS = [
    ("Against DGL 2.1.0 and DGL-KE 0.1.2, in detail",
     ["dgl_side_by_side", "sampling", "train_graphsage", "hetero", "kge_dist", "kge", "kge_scale"]),
    ("Against each hot path's own limit",
     ["limits", "cluster", "kge_limits", "kvstore", "row_kernels"]),
    ("Partitioning: time, memory and scale",
     ["partition", "partition_memory", "scale", "scale_training", "dist_partition"]),
]

# the peers' own scripts live beside the project, not in it: a path to one is printed as what it is
PEER_SCRIPTS = {
    "dgl/install.sh": "DGL 2.1.0's installer (DGL 2.1.0 and torch 2.2.1 in a venv of their own)",
    "dgl/gen_graph.py": "the peers' graph generator (a degree-corrected SBM in the project's .npz format)",
    "dgl/partition_bench.py": "DGL 2.1.0's own partition_graph, in its own venv",
    "dgl/standalone_bench.py": "DGL 2.1.0's own DistNodeDataLoader, in its own venv",
    "dgl/run_dist.sh": "DGL 2.1.0's own launch.py job, in its own venv",
    "dgl/dist_train.py": "DGL 2.1.0's own GraphSAGE training script",
    "kge/run_dglke.sh": "DGL-KE 0.1.2's own dglke_train (DGL 0.4.3, torch 1.6, Python 3.8)",
    "kge/run_pbg.sh": "PyTorch-BigGraph 1.0.0's own trainer (torch 1.6, Python 3.8)",
    "kge/pbg_run.py": "PyTorch-BigGraph 1.0.0's own trainer (torch 1.6, Python 3.8) on its TSV importer's files",
}
OUTSIDE = re.compile(r"(?:\.\./|~/|/[\w.-]+/)*shared/(?:peers/(?P<script>[\w/-]+(?:\.[\w-]+)*)|(?P<data>data)\b)")

# target rows of key/value records whose rounds are not under `<prefix>_ratio_runs`:
# prefix -> (rounds of ours, rounds of the peer, or None when ours are scored as they are)
ROUNDS = {
    "peak": ("ours_peak_rss_mb_runs", None),
    "ratio_vs_dgl_2.1.0": ("warm_epoch_seconds_slowest_trainer_runs", "dgl_2.1.0_warm_epoch_seconds_runs"),
}
NOT_SCORED = "not scored (fewer than 3 rounds)"
TARGET = re.compile(r"(?P<op>≥|≤|>=|<=)\s*(?P<value>\d[\d.,]*)")
VERDICT = re.compile(r"\b(met|missed)\b")


def num(x: float) -> str:
    """A figure as the page prints it: 4 significant digits, thousands with commas."""
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"


def numbers(text: str) -> list[float]:
    return [float(t.replace(",", "")) for t in re.findall(r"\d[\d,]*(?:\.\d+)?(?:e[+-]?\d+)?", text)]


class Score:
    """A figure's rounds against a target (op "≥" or "≤"): met only when the median of at least 3
    rounds meets it."""

    def __init__(self, rounds: list[float], op: str | None = None, target: float | None = None, unit: str = ""):
        self.rounds, self.op, self.target, self.unit = list(rounds), op, target, unit

    @property
    def median(self) -> float:
        return statistics.median(self.rounds)

    @property
    def met(self) -> bool | None:
        if len(self.rounds) < 3 or self.target is None:
            return None
        return self.median >= self.target if self.op == "≥" else self.median <= self.target

    def text(self) -> str:
        target = f"target {self.op} {num(self.target)}{self.unit}" if self.target is not None else ""
        if not self.rounds:
            return f"{target}: {NOT_SCORED}" if target else ""
        if len(self.rounds) < 3:
            figure = f"{num(self.median)} ({len(self.rounds)} round{'s' * (len(self.rounds) != 1)})"
            return f"{figure}, {target}: {NOT_SCORED}" if target else figure
        spread = f"median {num(self.median)} (range {num(min(self.rounds))}-{num(max(self.rounds))}, " \
                 f"{len(self.rounds)} rounds)"
        return f"{spread}, {target}: {'met' if self.met else 'missed'}" if target else spread


def parse_target(text: str) -> tuple[str, float] | None:
    m = TARGET.search(text)
    if not m:
        return None
    return ("≥" if m["op"] in ("≥", ">=") else "≤"), float(m["value"].replace(",", ""))


def ratios(ours: list[float], peer: list[float]) -> list[float]:
    """Each round's ratio: the rounds take ours and the peer back to back, in the order listed."""
    return [o / p for o, p in zip(ours, peer)] if len(ours) == len(peer) else []


def runs_of(cell) -> list[float]:
    """The rounds a table cell lists, as `FIGURE (a / b / c ...)` (each maybe with a unit); none otherwise."""
    for group in re.findall(r"\(([^()]*)\)", str(cell)):
        parts = [p.strip() for p in group.split("/")]
        if len(parts) > 1 and all(re.fullmatch(r"\d[\d,]*(?:\.\d+)?(?:\s*[A-Za-z]+)?", p) for p in parts):
            return [numbers(p)[0] for p in parts]
    return []


def key_target(key: str) -> tuple[str, str, float, str] | None:
    """`<prefix>_target_<ge|le>_<figure>[unit][_...]` as (prefix, op, figure, unit)."""
    m = re.fullmatch(r"(?P<prefix>.*?)_?target_(?P<op>ge|le)_(?P<t>\d+(?:\.\d+)?)(?P<unit>[A-Za-z]*)(?:_.*)?", key)
    if not m:
        return None
    unit = "×" if m["unit"] == "x" else f" {m['unit']}" if m["unit"] else ""
    return m["prefix"], "≥" if m["op"] == "ge" else "≤", float(m["t"]), unit


def _name_outside(text: str) -> str:
    """Paths outside the repository (the peers' scripts, the data folder) named by what they are."""
    return OUTSIDE.sub(lambda m: "DATA" if m["data"] else PEER_SCRIPTS.get(
        m["script"], f"a peer's own script ({Path(m['script']).name})"), text)


def _cell(v) -> str:
    if v is None:
        return ""
    return f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) and abs(v) >= 10000 else str(v)


def _date(r: dict) -> str:
    m = re.search(r"\d{4}-\d{2}-\d{2}", r.get("date") or "")
    return m[0] if m else ""


# --- scoring the records' own tables


def score_key_values(rows: list[list]) -> list[list]:
    """A key/value record's target rows (`X_target_ge_0.8: met`, `... (target <= 0.7: met)`) scored
    from the rounds the record lists beside them."""
    values = {str(k): str(v) for k, v in rows}

    def rounds_for(prefix: str) -> list[float]:
        if f"{prefix}_ratio_runs" in values:
            return numbers(values[f"{prefix}_ratio_runs"])
        if prefix in ROUNDS:
            ours, peer = ROUNDS[prefix]
            if ours in values and (peer is None or peer in values):
                return numbers(values[ours]) if peer is None else ratios(numbers(values[ours]), numbers(values[peer]))
            return []
        if f"{prefix}_runs" in values:  # the rounds' own figures (a gap, a peak, hours), scored as they are
            return numbers(values[f"{prefix}_runs"])
        for key in values:  # `<prefix>_dgl_<figure>_runs` against `<prefix>_<figure>_runs`
            m = re.fullmatch(rf"{re.escape(prefix)}_dgl_(.+)_runs", key)
            if m and f"{prefix}_{m[1]}_runs" in values:
                return ratios(numbers(values[f"{prefix}_{m[1]}_runs"]), numbers(values[key]))
        return []

    out = []
    for key, value in rows:
        key, value = str(key), str(value)
        target = key_target(key)
        inline = re.search(r"\(target (?P<op><=|>=|≤|≥) (?P<t>[\d.]+)(?::\s*(?:met|missed))?\)", value)
        if target and VERDICT.fullmatch(value.strip()):
            prefix, op, t, unit = target
            value = Score(rounds_for(prefix), op, t, unit).text()
        elif inline:
            op, t = parse_target(inline[0])
            score = Score(rounds_for(key), op, t)
            value = value[:inline.start()].rstrip() + "; " + (score.text() if len(score.rounds) >= 3 else
                                                             f"target {op} {num(t)}: {NOT_SCORED}")
        out.append([key, value])
    return out


def score_table(columns: list[str], rows: list[list]) -> tuple[list[str], list[list]]:
    """A hand-made table's target cells scored from the rounds its row lists: a ratio cell's
    `(rounds a b c)`, or ours and the peer as `FIGURE (a / b / c)` (paired in the order listed).
    A limits table's ratio, target and met columns become one."""
    lower = [c.lower() for c in columns]
    if "met" in lower and "target" in lower and any(c.startswith("ratio") for c in lower):
        ratio_i = next(i for i, c in enumerate(lower) if c.startswith("ratio"))
        target_i, met_i = lower.index("target"), lower.index("met")
        keep = [i for i in range(len(columns)) if i not in (target_i, met_i)]
        out = []
        for row in rows:
            cell = str(row[ratio_i])
            m = re.search(r"\(rounds ([^)]*)\)", cell)
            op_t = parse_target(str(row[target_i]))
            score = Score(numbers(m[1]) if m else [], *(op_t or (None, None)))
            rest = cell[m.end():].strip() if m else ""
            row = list(row)
            row[ratio_i] = score.text() + (rest if rest.startswith(";") else f" {rest}" if rest else "")
            out.append([row[i] for i in keep])
        columns = [("ours / limit: median of the rounds' ratios, target" if i == ratio_i else columns[i])
                   for i in keep]
        return columns, out
    target_cols = [i for i, c in enumerate(lower) if "target" in c]
    if not target_cols:
        return columns, rows
    t_i = target_cols[0]
    has_median = any("median" in c for c in lower)
    out = []
    for row in rows:
        row = list(row)
        cell = str(row[t_i])
        if VERDICT.search(cell):
            m = next((re.search(r"\(rounds ([^)]*)\)", str(c)) for c in row if "(rounds " in str(c)), None)
            listed = [r for r in (runs_of(c) for c in row) if len(r) >= 3]
            rounds = numbers(m[1]) if m else ratios(*listed[:2]) if len(listed) >= 2 else []
            op_t = parse_target(cell.split(":")[0]) or parse_target(columns[t_i])
            if len(rounds) >= 3 and op_t:
                row[t_i] = Score(rounds, *op_t).text() + cell[VERDICT.search(cell).end():]
            else:
                why = "not scored (the rounds' range is not recorded)" if has_median and not listed else NOT_SCORED
                row[t_i] = VERDICT.sub(why, cell)
        out.append(row)
    return columns, out


# --- the comparisons a user looks for


def _row(r: dict | None, starts: str) -> list | None:
    if not r:
        return None
    return next((row for row in r["table"]["rows"] if str(row[0]).startswith(starts)), None)


def _values(r: dict | None) -> dict[str, str]:
    if not r or r["table"]["columns"][:2] != ["figure", "value"]:
        return {}
    return {str(k): str(v) for k, v in r["table"]["rows"]}


def _without_runs(cell) -> str:
    return re.sub(r"\s*\([^()]*/[^()]*\)", "", str(cell))


def summary(records: dict[str, dict]) -> list[list[str]]:
    """One row per comparison with a peer: against, what, distgraph, the peer, ours / peer, date."""
    rows = []
    dgl = "DGL 2.1.0"

    side = records.get("dgl_side_by_side")
    row = _row(side, "`distgraph partition` whole command")
    if row:
        score = Score(ratios(runs_of(row[2]), runs_of(row[3])), *(parse_target(row[5]) or (None, None)))
        rows.append([dgl, "partitioning a 200k-node, 4M-edge graph, METIS, 2 parts: the whole `distgraph partition` "
                     "command against DGL's `partition_graph` call alone", _without_runs(row[2]),
                     _without_runs(row[3]), score.text(), _date(side)])
    scale = records.get("scale")
    row = _row(scale, "100M")
    if row:
        peer = str(row[8])
        secs = re.search(r"\(([\d.,]+) s command\)", peer) or re.search(r"([\d.,]+) s call", peer)
        peak = re.search(r"peak ([\d,]+) MB", peer)
        if secs and peak:
            t_ratio = float(row[2]) / numbers(secs[1])[0]
            m_ratio = float(row[3]) / numbers(peak[1])[0]
            rows.append([dgl, "partitioning 100M edges, 4 parts (ours streams through KaMinPar, DGL runs METIS)",
                         f"{row[2]} s, peak {num(float(row[3]))} MB", f"{secs[1]} s, peak {peak[1]} MB",
                         f"time {t_ratio:.2f}, memory {m_ratio:.3f} (1 round)", _date(scale)])
    row = _row(scale, "1B")
    if row and "recorded" in str(row[8]):
        rows.append([dgl, "partitioning 1B edges, 4 parts, in 12 GB (DGL: in 20 GB)",
                     f"{num(float(row[2]))} s, peak {num(float(row[3]))} MB",
                     str(row[8]).replace("recorded: ", "") + " (recorded from an earlier run)",
                     "recorded: not scored", _date(scale)])
    values = _values(records.get("sampling"))
    for threads in (1, 2):
        ours, peer = (values.get(f"threads_{threads}_seeds_per_second_runs"),
                      values.get(f"threads_{threads}_dgl_seeds_per_second_runs"))
        if ours and peer:
            target = next((key_target(k)[1:3] for k in values
                           if k.startswith(f"threads_{threads}_target_") and key_target(k)), None)
            score = Score(ratios(numbers(ours), numbers(peer)), *(target or (None, None)))
            rows.append([dgl, f"standalone neighbour sampling [10, 25], batch 1000, {threads} thread"
                         f"{'s' * (threads > 1)}, seeds/s (its DistNodeDataLoader)",
                         num(statistics.median(numbers(ours))), num(statistics.median(numbers(peer))), score.text(),
                         _date(records["sampling"])])
    values = _values(records.get("train_graphsage"))
    ours, peer = ROUNDS["ratio_vs_dgl_2.1.0"]
    if ours in values and peer in values:
        target = parse_target(values.get("ratio_vs_dgl_2.1.0", ""))
        score = Score(ratios(numbers(values[ours]), numbers(values[peer])), *(target or (None, None)))
        rows.append([dgl, "GraphSAGE training, warm epoch of 10 steps per trainer, 1 machine, 1 server, 2 trainers "
                     "(DGL's own launch.py)", f"{statistics.median(numbers(values[ours])):.2f} s",
                     f"{statistics.median(numbers(values[peer])):.2f} s", score.text(),
                     _date(records["train_graphsage"])])
    hetero = records.get("hetero")
    row = _row(hetero, "typed sampling against DGL")
    if row:
        ratio = re.search(r"[\d.]+", str(row[3]))
        score = Score(ratios(runs_of(row[1]), runs_of(row[2])), *(parse_target(str(row[4])) or (None, None)))
        rows.append([dgl, "heterogeneous (typed) sampling, ogbn-mag-shaped graph, seeds/s (its DistNodeDataLoader)",
                     _without_runs(row[1]), _without_runs(row[2]),
                     score.text() if len(score.rounds) >= 3 else f"{ratio[0] if ratio else row[3]} (ours 1 round), "
                     f"target {score.op} {num(score.target)}: {NOT_SCORED}" if score.target else str(row[3]),
                     _date(hetero)])
    rows.append([dgl, "KVStore pulls and pushes of feature rows", "not measured against DGL yet (against bare "
                 "ZeroMQ and `index_select`: see the limits below)", "", "", ""])

    kge = records.get("kge_dist")
    if kge:
        for name, what in (("positive triples / s", "KGE training throughput, TransE_l2 on FB15k-237, dim 200, "
                            "2 processes, positive triples/s"),
                           ("test MRR", "KGE test MRR (filtered), same run"),
                           ("testing (s)", "KGE evaluation of the test set (filtered ranking), s")):
            row = _row(kge, name)
            if not row:
                continue
            peer, single, dist = (numbers(str(c))[0] for c in row[1:4])
            rows.append(["DGL-KE 0.1.2", what, f"{_cell(row[2])} (`kge train`, 2 processes); "
                         f"{_cell(row[3])} (`kge dist-train`, 2 machines)", _cell(row[1]),
                         f"{single / peer:.2f} and {dist / peer:.2f} (1 round)", _date(kge)])
    pbg = kge_scale_rows(records.get("kge_scale"), rows)
    rows.append(["PyTorch-BigGraph 1.0.0", "KGE evaluation (filtered ranking)" if pbg else
                 "KGE training and evaluation", "not measured yet", "", "", ""])
    return rows


def kge_scale_rows(r: dict | None, rows: list[list[str]]) -> bool:
    """The scale benchmark's comparisons with DGL-KE and PyTorch-BigGraph, at each tier they ran
    (a peer that ran out of memory, with the tier and its message); whether PBG has a row."""
    values, pbg = _values(r), False
    tiers = [t for t in ("1m", "10m") if f"{t}_graph" in values]
    for tier in tiers:
        graph = values[f"{tier}_graph"].split(" (")[0].replace(" training triples", " triples")
        ours = values.get(f"{tier}_p_triples_per_s_per_core")
        what = (f"KGE training on a generated KG of {graph}, TransE_l2 dim 100, 1 core each, ours with the entity "
                f"table on disk (P = 4)")
        for peer, name in (("DGL-KE 0.1.2", "dglke"), ("PyTorch-BigGraph 1.0.0", "pbg")):
            failed = values.get(f"{tier}_{name}_failed")
            if failed:
                rows.append([peer, f"{what}: {name == 'pbg' and 'P = 4, ' or ''}does it run?", "runs" if ours else "",
                             failed.split("; its last lines")[0], "", _date(r)])
                pbg |= name == "pbg"
                continue
            theirs = values.get(f"{tier}_{name}_triples_per_s_per_core")
            if not (ours and theirs):
                continue
            pbg |= name == "pbg"
            for key, figure, unit, fmt in (
                    (f"{tier}_ours_over_{name}_triples_per_s_per_core", "positive triples/s per core", "",
                     lambda k: num(float(values[f"{tier}_{k}_triples_per_s_per_core"]))),
                    (f"{tier}_ours_over_{name}_peak_rss", "peak RSS of the process tree (MB, median)", "",
                     lambda k: num(statistics.median(numbers(values[f"{tier}_{k}_peak_rss_mb_runs"]))))):
                runs = values.get(f"{key}_ratio_runs")
                if not runs or (name == "dglke" and "peak_rss" in key):
                    continue
                target = next((key_target(k)[1:3] for k in values if k.startswith(f"{key}_target_")
                               and key_target(k)), None)
                score = Score(numbers(runs), *(target or (None, None)))
                rows.append([peer, f"{what}: {figure}", fmt("p"), fmt(name), score.text(), _date(r)])
    return pbg


SUMMARY_COLUMNS = ["against", "measured", "distgraph", "peer", "ours / peer", "date"]
SUMMARY_NOTES = [
    "Each row measures both systems in one run, on the same machine and input, taking turns round by round; "
    "\"recorded\" marks a peer's figure from an earlier run, which is never scored. Ratios are ours over the "
    "peer's (below 1 is faster for times, above 1 is faster for rates).",
    "DGL 2.1.0 cannot run two machines on one host, so training and sampling across machines have no DGL "
    "figure here; they are measured against their own limits below. Only FB15k-237 has been measured "
    "against DGL-KE.",
]


def section(r: dict, level: int = 2) -> str:
    """One benchmark's part of the page."""
    lines = [f"{'#' * level} {r['title']}", "", f"Command: `{r['command']}`" if not r["command"].startswith("see ")
             else f"Command: {r['command']}", ""]
    facts = [("Machine", r.get("machine")), ("Date", r.get("date")), ("Commit", r.get("commit")),
             ("Load average", r.get("load_average") or "not recorded"), ("Peer", r.get("peer")),
             ("Input", r.get("graph"))]
    lines += [f"- {k}: {v}" for k, v in facts if v]
    table = r["table"]
    if table["columns"][:2] == ["figure", "value"]:
        columns, rows = table["columns"], score_key_values(table["rows"])
    else:
        columns, rows = score_table(table["columns"], table["rows"])
    lines += ["", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    if r.get("notes"):
        lines += [""] + [f"- {n}" for n in r["notes"]]
    return _name_outside("\n".join(lines)) + "\n"


def plot(r: dict, out: Path) -> Path | None:
    """A bar chart of the table's `plot` columns (`x`: label columns, `y`: numeric columns)."""
    spec = r.get("plot")
    if not spec:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows, cols = r["table"]["rows"], r["table"]["columns"]
    labels = [" ".join(str(row[i]) for i in spec["x"]) for row in rows]
    fig, ax = plt.subplots(figsize=(1.6 + 1.2 * len(rows) * len(spec["y"]) ** 0.5, 3.4))
    width = 0.8 / len(spec["y"])
    for j, c in enumerate(spec["y"]):
        ax.bar([i + j * width for i in range(len(rows))], [float(row[c]) for row in rows], width, label=cols[c])
    ax.set_xticks([i + width * (len(spec["y"]) - 1) / 2 for i in range(len(rows))], labels, fontsize=8)
    ax.set_ylabel(spec.get("ylabel", ""))
    ax.set_title(r["title"], fontsize=9)
    if len(spec["y"]) > 1:
        ax.legend(fontsize=8)
    fig.tight_layout()
    path = out / f"{r['name']}.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def record_fresh(fresh: Path, recorded: Path) -> list[str]:
    """Copy each bench-out JSON newer than its recorded twin into the recorded folder."""
    copied = []
    for f in sorted(fresh.glob("*.json")) if fresh.is_dir() else []:
        dest = recorded / f.name
        if not dest.exists() or f.stat().st_mtime > dest.stat().st_mtime:
            shutil.copyfile(f, dest)
            copied.append(f.stem)
    return copied


def render(recorded: Path, plots: Path) -> str:
    records = sorted((json.loads(f.read_text()) for f in recorded.glob("*.json")),
                     key=lambda r: (r.get("order", 100), r["name"]))
    plots.mkdir(parents=True, exist_ok=True)
    for r in records:
        plot(r, plots)
    by_name = {r["name"]: r for r in records}
    parts = [HEADER]
    rows = summary(by_name)
    if rows:
        table = ["## Ours against the peers", "", "| " + " | ".join(SUMMARY_COLUMNS) + " |",
                 "|" + "---|" * len(SUMMARY_COLUMNS)]
        table += ["| " + " | ".join(row) + " |" for row in rows]
        table += [""] + [f"- {n}" for n in SUMMARY_NOTES]
        parts.append("\n" + _name_outside("\n".join(table)) + "\n")
    placed = set()
    for heading, names in GROUPS + [("Other figures", [r["name"] for r in records])]:
        group = [by_name[n] for n in names if n in by_name and n not in placed]
        if group:
            parts.append(f"\n## {heading}\n")
            parts += ["\n" + section(r, 3) for r in group]
            placed.update(r["name"] for r in group)
    return "".join(parts) + FOOTER


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--recorded", type=Path, default=ROOT / "benchmarks" / "results")
    ap.add_argument("--fresh", type=Path, default=ROOT / "bench-out", help="newer records of a run (also the plots)")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks.md")
    args = ap.parse_args()
    for name in record_fresh(args.fresh, args.recorded):
        print(f"recorded {name} from {args.fresh}")
    args.out.write_text(render(args.recorded, args.fresh))
    print(f"wrote {args.out} and the plots in {args.fresh}")


if __name__ == "__main__":
    main()
