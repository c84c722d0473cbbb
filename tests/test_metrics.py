"""Figures a person can see: TensorBoard event files that TensorBoard's own reader parses (its
CRC checks included), the JSON-lines twin, and the partitioning report (JSON and PNG)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from distgraph.cli import main as cli_main
from distgraph.metrics import MetricsLog, SummaryWriter
from distgraph.metrics.events import crc32c

event_file_loader = pytest.importorskip("tensorboard.backend.event_processing.event_file_loader")
event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")


def _events(path):
    return list(event_file_loader.EventFileLoader(str(path)).Load())


def test_crc32c_check_value():
    assert crc32c(b"123456789") == 0xE3069283  # the CRC-32C catalogue's check value
    assert crc32c(b"") == 0


def test_tensorboard_reads_the_scalars(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_scalar("loss", 2.5, 0)
        w.add_scalar("loss", 0.125, 7)
        w.add_scalar("accuracy/val", 0.75, 2**40)
        w.add_scalars_at(-3, {"a": 1.0, "b": -2.0}, walltime=1234.5)
    events = _events(w.path)
    assert events[0].file_version == "brain.Event:2"
    got = [(e.step, v.tag, v.tensor.float_val[0]) for e in events[1:] for v in e.summary.value]
    assert got == [(0, "loss", 2.5), (7, "loss", 0.125), (2**40, "accuracy/val", 0.75), (-3, "a", 1.0),
                   (-3, "b", -2.0)]
    assert events[-1].wall_time == 1234.5
    acc = event_accumulator.EventAccumulator(str(tmp_path))
    acc.Reload()
    assert sorted(acc.Tags()["scalars"]) == ["a", "accuracy/val", "b", "loss"]
    assert [(s.step, s.value) for s in acc.Scalars("loss")] == [(0, 2.5), (7, 0.125)]
    raw = bytearray(w.path.read_bytes())
    raw[-5] ^= 1  # one bit of the last record's data: the reader's CRC check drops that record
    w.path.write_bytes(bytes(raw))
    assert len(_events(w.path)) == len(events) - 1


def test_metrics_log_writes_a_run_per_trainer_and_json_lines(tmp_path):
    for rank in (0, 3):
        log = MetricsLog(tmp_path, rank)
        for epoch in range(3):
            log.log(epoch, loss=1.0 / (epoch + 1), **{"accuracy/val": 0.1 * epoch + rank})
        log.close()
    for rank in (0, 3):
        run = tmp_path / f"trainer-{rank:03d}"
        lines = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
        assert [(x["step"], x["rank"], x["loss"]) for x in lines] == [(0, rank, 1.0), (1, rank, 0.5),
                                                                       (2, rank, 1 / 3)]
        acc = event_accumulator.EventAccumulator(str(run))
        acc.Reload()
        assert [s.value for s in acc.Scalars("accuracy/val")] == pytest.approx([rank, 0.1 + rank, 0.2 + rank])


def test_partition_writes_its_report(tmp_path, sbm):
    from distgraph.data import save_npz

    save_npz(sbm, tmp_path / "g.npz")
    assert cli_main.main(["partition", "--input", str(tmp_path / "g.npz"), "--graph_name", "g", "--num_parts", "3",
                          "--balance_train", "--out", str(tmp_path / "p")]) == 0
    report = json.loads((tmp_path / "p" / "g-report.json").read_text())
    config = json.loads((tmp_path / "p" / "g.json").read_text())
    parts = report["parts"]
    assert [p["nodes"] for p in parts] == [m["num_inner_nodes"] for m in config["partitions"]]
    assert [p["halo_nodes"] for p in parts] == [m["num_local_nodes"] - m["num_inner_nodes"]
                                                for m in config["partitions"]]
    assert sum(p["nodes"] for p in parts) == 3000 and sum(p["edges"] for p in parts) == 30000
    assert sum(p["train_nodes"] for p in parts) == int(np.asarray(sbm.ndata["train_mask"]).sum())
    assert 0 < report["edge_cut"] < 1 and report["edge_cut"] == config["stats"]["edge_cut"]
    assert report["halo_share"] == pytest.approx(sum(p["halo_nodes"] for p in parts) / 3000)
    assert 1 <= report["balance"]["nodes"] < 1.05 and report["part_method"] == "metis"
    import xml.etree.ElementTree as ET

    svg = ET.parse(tmp_path / "p" / "g-report.svg").getroot()  # a well-formed SVG document
    bars = [r for r in svg.iter("{http://www.w3.org/2000/svg}rect") if r.find("{http://www.w3.org/2000/svg}title")
            is not None]
    assert len(bars) == 4 * 3  # a bar per part in each of the 4 panels
    assert bars[0].find("{http://www.w3.org/2000/svg}title").text == f"part 0: {parts[0]['nodes']:,}"
