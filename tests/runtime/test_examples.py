"""The examples resume from their checkpoints: a GraphSAGE run killed mid-way (its launcher
SIGKILLed) and resumed ends with the same model, bit for bit, as an uninterrupted run with
the same seed, standalone, on two loopback machines with sampler processes and with three
trainers; the RGCN example with its sparse embeddings, standalone. A trainer without
training nodes joins the others' steps; a job without any stops at start in one line."""

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import torch

from .conftest import child_env

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "graphsage" / "train_dist.py"
ARGS = "--graph_name g --num_epochs 6 --batch_size 100 --fan_out 4,4 --num_hidden 16 --seed 7"


def _digest(output: str) -> str:
    found = re.findall(r"model digest ([0-9a-f]{16})", output)
    assert len(found) == 1, output[-3000:]
    return found[0]


def _epochs(output: str) -> list[str]:
    """Per-epoch loss and accuracy lines, without their timings."""
    return re.findall(r"epoch (\d+): \d+ steps in [\d.]+ s, (loss .*)", output)


def test_standalone_resume_ends_with_the_same_model(parts, tmp_path):
    def run(*extra: str) -> str:
        argv = [sys.executable, str(EXAMPLE), *ARGS.split(), "--part_config", str(parts[1]), *extra]
        done = subprocess.run(argv, env=child_env(), capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        return done.stdout

    whole = run()
    ck = ["--checkpoint_dir", str(tmp_path / "ck"), "--checkpoint_interval", "2"]
    first = run(*ck, "--num_epochs", "3")  # stops after epoch 2 (a checkpoint at epochs 1 and 2)
    resumed = run(*ck, "--resume")
    assert "resumed from" in resumed and "step-0000000002" in resumed
    assert _epochs(first) + _epochs(resumed) == _epochs(whole)
    assert _digest(resumed) == _digest(whole)


def test_two_machines_killed_and_resumed_end_with_the_same_model(parts, tmp_path, launches):
    command = f"{sys.executable} {EXAMPLE} {ARGS} --num_epochs 3"
    whole = launches(tmp_path, parts[2], [1, 1], command, num_samplers=1)
    assert whole.wait(300) == 0, whole.output[-3000:]

    ck = tmp_path / "ck"
    resumable = f"{command} --checkpoint_dir {ck}"
    killed = launches(tmp_path, parts[2], [1, 1], resumable, num_samplers=1)
    deadline = time.monotonic() + 300
    while not list(ck.glob("step-*/checkpoint.json")) and time.monotonic() < deadline:
        time.sleep(0.02)
    killed.proc.kill()  # the launcher: every process of the job ends through its lifeline
    killed.proc.wait()
    assert killed.left_behind() == ([], [])
    assert "model digest" not in killed.output  # it did not finish
    for late in sorted(ck.glob("step-*"))[1:]:  # on a loaded machine the kill may come late: resume from the first
        shutil.rmtree(late)

    resumed = launches(tmp_path, parts[2], [1, 1], f"{resumable} --resume", num_samplers=1)
    assert resumed.wait(300) == 0, resumed.output[-3000:]
    assert "resumed from" in resumed.output
    assert _digest(resumed.output) == _digest(whole.output)
    done = _epochs(resumed.output)
    assert done and done == _epochs(whole.output)[-len(done):]


def _without_newest_checkpoint(done: Path, to: Path) -> None:
    """A copy of a finished run's checkpoint folder as a run stopped before its last checkpoint left it."""
    shutil.copytree(done, to)
    shutil.rmtree(max(to.glob("step-*")))


def test_three_trainers_resume_bitwise(parts, tmp_path, launches):
    """With three trainers, gloo's ring all-reduce adds an element's values in an order that
    depends on its place in DDP's buckets, which DDP rebuilds after a run's first step; the
    examples sum in rank order (`rank_order_allreduce_hook`), so the resumed run still ends
    with the uninterrupted run's model, bit for bit."""
    ck = tmp_path / "ck"
    command = f"{sys.executable} {EXAMPLE} {ARGS} --num_epochs 3"
    whole = launches(tmp_path, parts[1], [1], f"{command} --checkpoint_dir {ck}", num_trainers=3)
    assert whole.wait(300) == 0, whole.output[-3000:]
    _without_newest_checkpoint(ck, tmp_path / "ck2")
    resumed = launches(tmp_path, parts[1], [1], f"{command} --checkpoint_dir {tmp_path / 'ck2'} --resume",
                       num_trainers=3)
    assert resumed.wait(300) == 0, resumed.output[-3000:]
    assert resumed.output.count("resumed from") == 3 and "step-0000000001" in resumed.output
    assert _digest(resumed.output) == _digest(whole.output)


def test_rgcn_resumes_with_its_sparse_embeddings_bitwise(mag_parts, tmp_path):
    """The RGCN example's checkpoints hold its dense model, both optimizers, the sparse
    embeddings with their SparseAdam state and the best epoch: resumed, it ends as the
    uninterrupted run does, bit for bit."""
    rgcn = EXAMPLE.parents[1] / "rgcn" / "entity_classify_dist.py"
    args = ("--graph-name mag --fanout 5,5 --batch-size 128 --n-hidden 16 --eval-batch-size 500 --dropout 0.2 "
            "--use-self-loop --n-bases 2 --n-epochs 3 --layer-norm --sparse-embedding --sparse-lr 0.06 --standalone")

    def run(*extra) -> str:
        argv = [sys.executable, str(rgcn), *args.split(), "--conf-path", str(mag_parts[1]), *extra]
        done = subprocess.run(argv, env=child_env(), capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        return done.stdout

    whole = run("--checkpoint-dir", str(tmp_path / "ck"))
    _without_newest_checkpoint(tmp_path / "ck", tmp_path / "ck2")
    resumed = run("--checkpoint-dir", str(tmp_path / "ck2"), "--resume")
    assert "resumed from" in resumed and "step-0000000001" in resumed
    best = re.compile(r"best Val Acc ([\d.]+) at epoch (\d+); Test Acc ([\d.]+)")
    assert best.search(resumed).groups() == best.search(whole).groups()
    assert _digest(resumed) == _digest(whole)


def _with_train_nodes(graph, count: int, out: Path) -> Path:
    """A 2-part partition of `graph` whose train mask selects only its first `count` nodes."""
    from distgraph.tensor_graph import Graph
    from distgraph.partition import partition_graph

    mask = torch.zeros(graph.num_nodes(), dtype=torch.bool)
    mask[:count] = True
    g = Graph(graph.src, graph.dst, graph.num_nodes(), ndata={**graph.ndata, "train_mask": mask})
    partition_graph(g, "g", 2, out, part_method="random")
    return out / "g.json"


def test_a_trainer_without_training_nodes_joins_the_others_steps(graph, tmp_path, launches):
    """3 training nodes, 4 trainers: trainer 0's share is empty; the job trains to the end
    (DDP's join) instead of the others waiting for it in their all-reduces."""
    part_config = _with_train_nodes(graph, 3, tmp_path / "p")
    job = launches(tmp_path, part_config, [1, 1], f"{sys.executable} {EXAMPLE} {ARGS} --num_epochs 2", num_trainers=2)
    assert job.wait(300) == 0, job.output[-3000:]
    assert "trainer 0 has 0 training nodes" in job.output and "trainers [0] have no training node batch" in job.output
    assert len(_epochs(job.output)) == 2 and _digest(job.output)
    assert job.left_behind() == ([], [])


def test_a_job_without_training_nodes_stops_at_start_with_both_counts(graph, tmp_path, launches):
    part_config = _with_train_nodes(graph, 0, tmp_path / "p")
    job = launches(tmp_path, part_config, [1, 1], f"{sys.executable} {EXAMPLE} {ARGS}", num_trainers=2)
    assert job.wait(300) != 0
    assert job.output.count("cannot train: 0 training nodes for 4 trainers") == 1, job.output[-3000:]
    assert "Traceback" not in job.output and "epoch 0" not in job.output
    failed = re.search(r"\[launch\] failed with the error above: (.*)", job.output).group(1).split(", ")
    assert failed[0] in {f"{m}/trainer/{r}" for m, r in ((0, 0), (0, 1), (1, 2), (1, 3))}
    log = re.search(r"\[launch\] their tracebacks: (.*)", job.output).group(1)
    assert "check_train_shares" in open(log).read()  # the tracebacks are kept, out of sight
    assert job.left_behind() == ([], [])


def test_more_gpus_than_the_machine_has_stops_the_examples_in_one_line(parts, mag_parts):
    """`--num_gpus` (RGCN: `--num-gpus`) beyond the machine's CUDA devices: an error of one line
    naming both counts, before any training (on a machine without a GPU, any positive count)."""
    rgcn = EXAMPLE.parents[1] / "rgcn" / "entity_classify_dist.py"
    too_many = str(torch.cuda.device_count() + 1)
    for argv in ([EXAMPLE, *ARGS.split(), "--part_config", parts[1], "--num_gpus", too_many],
                 [rgcn, "--graph-name", "mag", "--conf-path", mag_parts[1], "--standalone", "--num-gpus", too_many]):
        done = subprocess.run([sys.executable, *map(str, argv)], env=child_env(), capture_output=True, text=True,
                              timeout=300)
        error = done.stderr.strip().splitlines()[-1]
        assert done.returncode == 1 and error.startswith("distgraph.errors.InputError: "), done.stderr[-2000:]
        assert f"num_gpus is {too_many} but torch finds {int(too_many) - 1} CUDA devices" in error
        assert "epoch" not in done.stdout.lower()
