"""Scripts written in DGL's idioms (tests/runtime/dgl_scripts: the DistDGL slides' script,
DGL's GraphSAGE node-classification and link-prediction examples' structure, and a
DistEmbedding-only script without DDP) run with only their import lines naming distgraph:
standalone on a 1-part partition, and launched on 2 loopback machines (with sampler
processes for two of them, two trainers per machine for another), each reaching a clear
accuracy or AUC bar."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import child_env

SCRIPTS = Path(__file__).parent / "dgl_scripts"
# script: (extra arguments, what its RESULT line must show, trainers per machine, sampler processes)
# (8 classes: chance is 0.125 accuracy; 0.5 AUC. Standalone runs reached 0.75-0.83 accuracy,
# AUC 0.75 (GraphSAGE) and 0.86 (embeddings) when these bars were set.)
CASES = {
    "slides": ("--num_epochs 15 --lr 0.03", {"val_acc": 0.6, "own_sampler_acc": 0.55, "emb_moved": 1.0}, 2, 0),
    "node_classification": ("--num_epochs 15 --lr 0.03", {"val_acc": 0.6, "test_acc": 0.6}, 1, 1),
    "link_prediction": ("--num_epochs 10 --lr 0.03 --batch_size 200", {"auc": 0.7}, 1, 1),
    "embedding_only": ("--num_epochs 20 --lr 0.1 --batch_size 200", {"auc": 0.75}, 1, 0),
}


def _results(output: str) -> list[dict[str, float]]:
    rows = [dict(kv.split("=") for kv in m.group(1).split()) for m in re.finditer(r"RESULT (.*)", output)]
    return [{k: float(v) for k, v in r.items()} for r in rows]


def _check(rows: list[dict[str, float]], bars: dict[str, float], trainers: int, output: str) -> None:
    assert len(rows) == trainers, output[-3000:]
    for row in rows:
        for key, bar in bars.items():
            assert row[key] > bar, f"{key} {row[key]} <= {bar}:\n{output[-3000:]}"


@pytest.mark.parametrize("script", sorted(CASES))
def test_standalone(script, parts):
    extra, bars, _, _ = CASES[script]
    argv = [sys.executable, str(SCRIPTS / f"{script}.py"), "--part_config", str(parts[1]), "--standalone",
            *extra.split()]
    done = subprocess.run(argv, env=child_env(), capture_output=True, text=True, timeout=600, cwd=SCRIPTS)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    _check(_results(done.stdout), bars, 1, done.stdout + done.stderr)


@pytest.mark.parametrize("script", sorted(CASES))
def test_two_machines(script, parts, tmp_path, launches):
    extra, bars, trainers, samplers = CASES[script]
    command = f"{sys.executable} {SCRIPTS / script}.py --ip_config {tmp_path / 'ip_config.txt'} {extra}"
    job = launches(tmp_path, parts[2], [1, 1], command, num_trainers=trainers, num_samplers=samplers)
    assert job.wait(600) == 0, job.output[-4000:]
    _check(_results(job.output), bars, 2 * trainers, job.output)
    assert job.left_behind() == ([], [])
