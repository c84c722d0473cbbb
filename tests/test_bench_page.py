"""docs/benchmarks.md is the page `make bench-page` renders from the recorded JSON, so the page
and its records cannot drift apart; every record has what a results page needs."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _page():
    spec = importlib.util.spec_from_file_location("bench_page", ROOT / "benchmarks" / "page.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_page_is_rendered_from_the_records(tmp_path):
    page = _page()
    text = page.render(ROOT / "benchmarks" / "results", tmp_path)
    assert text == (ROOT / "docs" / "benchmarks.md").read_text(), "run `make bench-page` and commit the page"
    assert (tmp_path / "partition.png").read_bytes()[:4] == b"\x89PNG"


def test_every_record_names_command_machine_date_and_peer():
    for f in (ROOT / "benchmarks" / "results").glob("*.json"):
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
