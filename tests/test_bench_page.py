"""docs/benchmarks.md is the page `make bench-page` renders from the recorded JSON, so the page
and its records cannot drift apart; every record has what a results page needs; a target is
"met" only when the median of at least 3 rounds meets it; the page opens with the comparisons
against the peers, names no issue in a heading and no path outside the repository."""

from __future__ import annotations

import importlib.util
import json
import re
import statistics
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
PAGE = ROOT / "docs" / "benchmarks.md"
# how the page prints a scored figure: median, range and rounds, then the target and the verdict
SCORED = re.compile(r"median (?P<m>[\d.,]+) \(range (?P<lo>[\d.,]+)-(?P<hi>[\d.,]+), (?P<n>\d+) rounds\), "
                    r"target (?P<op>[≥≤]) (?P<t>[\d.,]+)[^:|]*: (?P<v>met|missed)\b")


def _page():
    spec = importlib.util.spec_from_file_location("bench_page", ROOT / "benchmarks" / "page.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _f(text: str) -> float:
    return float(text.replace(",", ""))


def _verdicts_are_scored(text: str) -> int:
    """Every 'met' or 'missed' of `text` ends a scored figure of >= 3 rounds whose median decides it."""
    ends = {}
    for m in SCORED.finditer(text):
        ends[m.end()] = m
    words = list(re.finditer(r"\b(met|missed)\b", text))
    for w in words:
        line = text[text.rfind("\n", 0, w.start()) + 1:text.find("\n", w.end())]
        m = ends.get(w.end())
        assert m, f"'{w[0]}' without the median and range of 3 rounds beside it: {line[:300]}"
        median, lo, hi, target = _f(m["m"]), _f(m["lo"]), _f(m["hi"]), _f(m["t"])
        assert int(m["n"]) >= 3, line
        assert lo <= median <= hi, line
        meets = median >= target if m["op"] == "≥" else median <= target
        assert meets == (m["v"] == "met"), f"the median decides the target: {line[:300]}"
    return len(words)


def test_the_page_is_rendered_from_the_records(tmp_path):
    page = _page()
    text = page.render(RESULTS, tmp_path)
    assert text == PAGE.read_text(), "run `make bench-page` and commit the page"
    assert (tmp_path / "hetero_accuracy.png").read_bytes()[:4] == b"\x89PNG"  # a record with a plot


def test_every_record_names_command_machine_date_and_peer():
    for f in RESULTS.glob("*.json"):
        r = json.loads(f.read_text())
        assert r["name"] == f.stem and r["command"] and r["machine"] and r["date"] and r["peer"], f
        width = len(r["table"]["columns"])
        assert r["table"]["rows"] and all(len(row) == width for row in r["table"]["rows"]), f


def test_fresh_records_replace_older_ones(tmp_path):
    page = _page()
    fresh, recorded = tmp_path / "fresh", tmp_path / "recorded"
    fresh.mkdir()
    recorded.mkdir()
    old = {"name": "x", "title": "X", "command": "c", "machine": "m", "date": "d", "peer": "p",
           "table": {"columns": ["figure", "value"], "rows": [["a", 1]]}}
    (recorded / "x.json").write_text(json.dumps(old))
    assert page.record_fresh(fresh, recorded) == []
    (fresh / "x.json").write_text(json.dumps({**old, "table": {"columns": ["figure", "value"], "rows": [["a", 2]]}}))
    assert page.record_fresh(fresh, recorded) == ["x"]
    assert "| a | 2 |" in page.render(recorded, tmp_path)


def test_every_met_on_the_page_is_a_median_of_3_rounds_that_meets_its_target():
    assert _verdicts_are_scored(PAGE.read_text()) > 20


def test_the_page_scores_the_rounds_the_records_hold():
    """Each key/value record's `X_target_..` row is printed with the median and range of `X_ratio_runs`,
    and each limits row with the median of its rounds."""
    page, text = _page(), PAGE.read_text()
    checked = 0
    for f in RESULTS.glob("*.json"):
        r = json.loads(f.read_text())
        rows = r["table"]["rows"]
        if r["table"]["columns"][:2] == ["figure", "value"]:
            values = {str(k): str(v) for k, v in rows}
            for key in values:
                m = re.fullmatch(r"(.*)_target_(ge|le)_([\d.]+)", key)
                if m and f"{m[1]}_ratio_runs" in values:
                    runs = page.numbers(values[f"{m[1]}_ratio_runs"])
                    meets = statistics.median(runs) >= float(m[3]) if m[2] == "ge" else \
                        statistics.median(runs) <= float(m[3])
                    want = (f"| {key} | median {page.num(statistics.median(runs))} (range {page.num(min(runs))}-"
                            f"{page.num(max(runs))}, {len(runs)} rounds), target {'≥' if m[2] == 'ge' else '≤'} "
                            f"{page.num(float(m[3]))}: {'met' if meets else 'missed'} |")
                    assert want in text, want
                    checked += 1
        elif "met" in r["table"]["columns"]:
            for row in rows:
                runs = page.numbers(re.search(r"\(rounds ([^)]*)\)", str(row[4]))[1])
                assert f"median {page.num(statistics.median(runs))} (range" in text, row
                checked += 1
    assert checked >= 20


def test_a_figure_of_fewer_than_3_rounds_is_not_scored_and_the_median_decides(tmp_path):
    page = _page()
    records = [
        {"name": "kv", "title": "Key values", "command": "c", "machine": "m", "date": "2026-01-01", "peer": "p",
         "table": {"columns": ["figure", "value"], "rows": [
             ["one_ratio_runs", "0.9"], ["one_target_ge_0.8", "met"],
             ["three_ratio_runs", "0.9 0.5 0.6"], ["three_target_ge_0.8", "met"],
             ["speed", "0.4 (target <= 0.5: met)"]]}},
        {"name": "hand", "title": "Hand made", "command": "c", "machine": "m", "date": "2026-01-01", "peer": "p",
         "table": {"columns": ["figure", "ours (runs)", "peer (runs)", "ratio", "target"], "rows": [
             ["single figures", "10", "5", "2 ×", "≥ 1.5 ×: met"],
             ["paired rounds", "10 (10 / 10 / 10)", "5 (1 / 20 / 20)", "2 ×", "≥ 1.5 ×: met"]]}},
    ]
    for r in records:
        (tmp_path / f"{r['name']}.json").write_text(json.dumps(r))
    text = page.render(tmp_path, tmp_path / "plots")
    assert "| one_target_ge_0.8 | 0.9 (1 round), target ≥ 0.8: not scored (fewer than 3 rounds) |" in text
    assert "| three_target_ge_0.8 | median 0.6 (range 0.5-0.9, 3 rounds), target ≥ 0.8: missed |" in text
    assert "| speed | 0.4; target ≤ 0.5: not scored (fewer than 3 rounds) |" in text
    assert "| single figures | 10 | 5 | 2 × | ≥ 1.5 ×: not scored (fewer than 3 rounds) |" in text
    assert "median 0.5 (range 0.5-10, 3 rounds), target ≥ 1.5: missed |" in text
    _verdicts_are_scored(text)


def test_the_page_opens_with_the_comparisons_against_the_peers():
    text = PAGE.read_text()
    headings = re.findall(r"^(#+) (.*)$", text, re.M)
    assert headings[1] == ("##", "Ours against the peers")
    intro = text[:text.index("## Ours against the peers")].strip().splitlines()
    assert len(intro) <= 6, "a short introduction, then the comparisons"
    summary = text[text.index("## Ours against the peers"):text.index("\n## ", text.index("## Ours against"))]
    rows = [line for line in summary.splitlines() if line.startswith("| ") and not line.startswith("| against")]
    peers = [row.split(" | ")[0][2:] for row in rows]
    assert {"DGL 2.1.0", "DGL-KE 0.1.2"} <= set(peers)
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", cells[-1]) or "not measured" in row, row
        if "recorded" in row:
            assert not re.search(r"\bmet\b", row), "a figure of another run is never scored"
    assert any("PyTorch-BigGraph" in row and "not measured" in row for row in rows) or \
        not any("PyTorch-BigGraph" in row for row in rows)
    assert text.index("## Ours against the peers") < text.index("Every hot path against its own limit")


def test_no_heading_names_an_issue_and_no_path_leaves_the_repository():
    text = PAGE.read_text()
    for level, heading in re.findall(r"^(#+) (.*)$", text, re.M):
        assert not re.search(r"\bissues?\s*#?\d+", heading, re.I), heading
    assert "../shared" not in text and "shared/peers" not in text and "/work/" not in text.replace(
        "/work/main/benchmarks/", "")


@pytest.mark.parametrize("path, name", [("../shared/peers/kge/run_dglke.sh", "DGL-KE 0.1.2's own dglke_train"),
                                        ("../shared/peers/dgl/partition_bench.py", "DGL 2.1.0's own partition_graph"),
                                        ("/work/shared/data", "DATA")])
def test_paths_outside_the_repository_are_named_by_what_they_are(tmp_path, path, name):
    page = _page()
    r = {"name": "x", "title": "X", "command": f"run --peer {path}", "machine": "m", "date": "d", "peer": "p",
         "table": {"columns": ["figure", "value"], "rows": [["a", 1]]}}
    (tmp_path / "x.json").write_text(json.dumps(r))
    text = page.render(tmp_path, tmp_path / "plots")
    assert name in text and "shared/" not in text


def test_a_tier_keeps_each_rows_run_and_drops_runs_left_without_rows(monkeypatch):
    """kge_scale's record: a run that measured part of a tier replaces those rows and keeps the
    others with the run they came from; a run whose rows were all replaced leaves the record."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location("kge_scale_record", ROOT / "benchmarks" / "kge_scale.py")
    ks = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "kge_scale_record", ks)  # its dataclasses look themselves up there
    spec.loader.exec_module(ks)
    run = lambda name: {"command": f"cmd {name}", "date": f"date {name}", "commit": name}  # noqa: E731
    tier = ks.merged_tier(None, run("a"), [["fb_epoch", "1"], ["fb_rss", "2"], ["fb_graph", "g"]], whole=False)
    tier = ks.merged_tier(tier, run("b"), [["fb_partition", "3"], ["fb_graph", "g"]], whole=False)
    assert tier["rows"] == [["fb_epoch", "1"], ["fb_rss", "2"], ["fb_graph", "g"], ["fb_partition", "3"]]
    assert [r["commit"] for r in tier["runs"]] == ["a", "b"]
    assert ks.provenance("fb", tier, "command") == "cmd a (fb: the other figures) + cmd b (fb: graph, partition)"
    assert ks.provenance("fb", tier, "commit") == "a + b (fb)"
    tier = ks.merged_tier(tier, run("c"), [["fb_epoch", "4"], ["fb_rss", "5"], ["fb_graph", "g"]], whole=False)
    assert [r["commit"] for r in tier["runs"]] == ["b", "c"]  # a's rows were all measured again
    assert dict(tier["rows"]) == {"fb_epoch": "4", "fb_rss": "5", "fb_graph": "g", "fb_partition": "3"}
    assert ks.provenance("fb", tier, "command") == "cmd b (fb: partition) + cmd c (fb: the other figures)"
    whole = ks.merged_tier(tier, run("d"), [["fb_epoch", "6"]], whole=True)
    assert whole["rows"] == [["fb_epoch", "6"]] and ks.provenance("fb", whole, "date") == "date d (fb)"
