"""KGE on a device without a GPU: `--gpu` ids run the device path on CPUs here
(DISTGRAPH_KGE_GPU_TYPE=cpu), the same code a GPU runs but for the CUDA calls, and it must
train, rank and checkpoint exactly as the plain CPU path of the same seed; `--async_update`
learns close to the synchronous run; `--rel_part` keeps each process's relations on its
device and writes them back; `--gpu` follows DGL-KE's rules. (test_kge_device_gpu.py runs
the path on CUDA.)"""

import io
import multiprocessing
import subprocess
import sys
import threading
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from test_kge_train import _config

from distgraph.errors import InputError
from distgraph.kge import EvalConfig, TrainConfig, eval_kge, train_kge
from distgraph.kge.config import check_gpu, inert_flags, with_gpus
from distgraph.kge.saved_model import load_model
from distgraph.kge.train import placement, worker
from distgraph.cluster.env import KGE_GPU_TYPE as GPU_TYPE_ENV
from distgraph.kge.train.device import check_gpus, device_of
from distgraph.kge.train.updates import Updates


@pytest.fixture
def on_cpu(monkeypatch):
    """`--gpu` ids name CPU devices; and a record of the tables each trainer held on its device."""
    monkeypatch.setenv(GPU_TYPE_ENV, "cpu")
    held = []

    class Recorded(placement.DeviceTables):
        def __init__(self, store, device, chosen, deferred=False):
            held.append((str(device), {name: None if own is None else own.tolist() for name, own in chosen.items()}))
            super().__init__(store, device, chosen, deferred)

    monkeypatch.setattr(worker, "DeviceTables", Recorded)
    return held


def _tables(res) -> dict[str, np.ndarray]:
    return load_model(res.save_dir).tables


def test_gpu_ids_follow_dglke_rules(monkeypatch):
    monkeypatch.delenv(GPU_TYPE_ENV, raising=False)
    assert with_gpus(TrainConfig(gpu=[0, 1])).num_proc == 2  # one process per GPU at least
    assert with_gpus(TrainConfig(gpu=[0, 1], num_proc=4)).num_proc == 4
    assert with_gpus(TrainConfig(gpu=[3], num_proc=3)).num_proc == 3  # all on the one GPU
    with pytest.raises(InputError, match="--num_proc 3 does not share out evenly over the 2 GPUs of --gpu 0 1: use "
                                         "a multiple of 2 processes"):
        with_gpus(TrainConfig(gpu=[0, 1], num_proc=3))
    for gpu, message in (([-1, 0], "mixes -1 \\(the CPU\\) with GPU ids"), ([0, 0], "names a GPU twice"),
                         ([-2], "a GPU id is 0 or more")):
        with pytest.raises(InputError, match=message):
            check_gpu(gpu)
    assert [str(device_of([2, 5], rank)) for rank in range(4)] == ["cuda:2", "cuda:5", "cuda:2", "cuda:5"]
    assert str(device_of(None, 1)) == str(device_of([-1], 0)) == "cpu"


def test_the_device_type_of_gpu_ids(monkeypatch):
    monkeypatch.setenv(GPU_TYPE_ENV, "cpu")
    assert [str(device_of([0, 1], rank)) for rank in range(3)] == ["cpu:0", "cpu:1", "cpu:0"]
    check_gpus([0, 7])  # CPU devices: nothing to look for
    monkeypatch.setenv(GPU_TYPE_ENV, "mps")
    with pytest.raises(InputError, match="^DISTGRAPH_KGE_GPU_TYPE='mps': --gpu ids name cuda devices"):
        device_of([0], 0)


def test_flags_that_change_nothing_on_a_device_are_said():
    lines = inert_flags(TrainConfig(gpu=[0, 1], mix_cpu_gpu=True), processes=2)
    assert lines == ["note: --mix_cpu_gpu changes nothing with 2 training processes: they share the embeddings in "
                     "CPU memory anyway, each scoring on its GPU"]
    assert inert_flags(TrainConfig(gpu=[0], mix_cpu_gpu=True), processes=1) == []
    assert inert_flags(TrainConfig(gpu=[0], async_update=True), processes=1) == []


def test_which_tables_a_trainer_keeps_on_its_gpu():
    """DGL-KE's placement: every table on the GPU of the job's one process (the relations alone
    with --mix_cpu_gpu), the relations a process alone trains under --rel_part on one machine,
    nothing where other processes train the same rows."""
    triples = torch.tensor([[0, 3, 1], [1, 5, 2], [2, 3, 0]])

    def held(trainers=1, machines=1, **flags):
        trainer = SimpleNamespace(cfg=TrainConfig(**flags), ctx=SimpleNamespace(num_trainers=trainers,
                                                                                num_machines=machines),
                                  tables=SimpleNamespace(tables={"entity": 0, "relation": 0, "projection": 0},
                                                         relation_names=lambda: ["relation", "projection"]),
                                  triples=triples)
        return {name: None if own is None else own.tolist() for name, own in worker.Trainer._held(trainer).items()}

    assert held() == held(gpu=[-1]) == held(trainers=2, gpu=[0, 1]) == {}
    assert held(gpu=[0]) == {"entity": None, "relation": None, "projection": None}
    assert held(gpu=[0], mix_cpu_gpu=True) == {"relation": None, "projection": None}
    assert held(trainers=2, gpu=[0, 1], rel_part=True) == {"relation": [3, 5], "projection": [3, 5]}
    assert held(trainers=2, machines=2, gpu=[0], rel_part=True) == {}  # the machines share relations


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA device")
def test_a_gpu_the_machine_lacks_is_one_clear_error(tmp_path):
    with pytest.raises(InputError, match=r"^--gpu 0 1: this machine has no GPU 0 \(torch finds no CUDA device on "
                                         r"it\); pass ids of its GPUs, or drop --gpu to train on CPUs$"):
        check_gpus([0, 1])
    with pytest.raises(InputError, match="this machine has no GPU 0"):
        train_kge(_config(tmp_path, gpu=[0]), out=io.StringIO())
    with pytest.raises(InputError, match="runs on the CPU: drop --gpu"):
        train_kge(_config(tmp_path, gpu=[0], num_entity_partitions=2), out=io.StringIO())


@pytest.mark.parametrize("model, flags, held", [
    ("TransE_l2", {}, {"entity": None, "relation": None}),  # one process: every table on its device
    ("TransE_l2", {"mix_cpu_gpu": True}, {"relation": None}),  # the entity table stays in CPU memory
    ("TransR", {"neg_deg_sample": True, "loss_genre": "Hinge", "pairwise": True, "neg_adversarial_sampling": False},
     {"entity": None, "relation": None, "projection": None}),
])
def test_the_device_path_trains_and_ranks_as_the_cpu_path(tmp_path, on_cpu, model, flags, held):
    """Bit for bit: the same rows, gradients, updates and rankings, with validation (which
    writes the device's rows back in the middle of training) and the test."""
    settings = dict(max_step=100, log_interval=50, valid=True, eval_interval=50, **flags)
    plain = train_kge(_config(tmp_path, model, **settings), out=io.StringIO())
    assert on_cpu == [("cpu", {})]
    on_cpu.clear()
    device = train_kge(_config(tmp_path, model, gpu=[0], **settings), out=io.StringIO())
    assert on_cpu == [("cpu:0", held)]
    assert device.metrics == plain.metrics and set(plain.metrics) == {"Valid (step 50)", "Valid (step 100)", "Test"}
    for name, rows in _tables(plain).items():
        assert np.array_equal(_tables(device)[name], rows), name


def test_a_device_run_resumes_from_the_rows_it_wrote_back(tmp_path, on_cpu):
    """Checkpoints hold the rows and Adagrad state of the device's tables: a run stopped after
    one and resumed saves what an uninterrupted run saves."""
    ck = str(tmp_path / "ck")
    whole = train_kge(_config(tmp_path, max_step=60, test=False, gpu=[0]), out=io.StringIO())
    train_kge(_config(tmp_path, max_step=35, test=False, gpu=[0], checkpoint_dir=ck, checkpoint_interval=30),
              out=io.StringIO())
    resumed = train_kge(_config(tmp_path, max_step=60, test=False, gpu=[0], checkpoint_dir=ck, checkpoint_interval=30,
                                resume=True), out=io.StringIO())
    for name, rows in _tables(whole).items():
        assert np.array_equal(_tables(resumed)[name], rows), name


@pytest.mark.parametrize("gpu", [None, [0]])
def test_async_updates_learn_close_to_synchronous_ones(tmp_path, on_cpu, gpu):
    """--async_update on the CPU path and on the device path: the same seed reaches about the
    synchronous loss and MRR (a step may miss the previous step's update, no more)."""
    settings = dict(max_step=300, log_interval=25, gpu=gpu, no_save_emb=True)
    sync_log, async_log = io.StringIO(), io.StringIO()
    sync = train_kge(_config(tmp_path, **settings), out=sync_log)
    asynchronous = train_kge(_config(tmp_path, async_update=True, **settings), out=async_log)
    assert asynchronous.metrics["Test"]["MRR"] > 0.9  # it learns (a random ranking scores about 0.02)
    assert abs(asynchronous.metrics["Test"]["MRR"] - sync.metrics["Test"]["MRR"]) < 0.05
    losses = [[float(line.split("average loss: ")[1].split(",")[0]) for line in log.getvalue().splitlines()
               if "average loss: " in line] for log in (sync_log, async_log)]
    assert len(losses[0]) == len(losses[1]) == 12
    for s, a in zip(losses[0][1:], losses[1][1:]):  # (the first 25 steps, where the rows change most, differ more)
        assert abs(a - s) < 0.1 * s, losses


def test_updates_run_in_order_in_a_thread_and_raise_in_the_trainer():
    done, threads = [], set()
    updates = Updates(asynchronous=True)
    for i in range(20):
        updates.submit(lambda i=i: (done.append(i), threads.add(threading.current_thread().name)))
    updates.drain()
    assert done == list(range(20)) and threads == {"kge-async-update"}
    updates.submit(lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        updates.drain()
    updates.submit(lambda: done.append("after"))
    updates.close()
    assert done[-1] == "after" and not any(t.name == "kge-async-update" for t in threading.enumerate())
    inline = Updates(asynchronous=False)
    inline.submit(lambda: done.append("now"))
    assert done[-1] == "now"
    inline.drain()
    inline.close()


def test_eval_on_the_device_ranks_as_on_the_cpu(tmp_path, on_cpu):
    res = train_kge(_config(tmp_path, max_step=60, test=False), out=io.StringIO())
    base = dict(model_path=str(res.save_dir), batch_size_eval=16)
    for extra in ({}, {"neg_sample_size_eval": 20}, {"no_eval_filter": True}):
        plain = eval_kge(EvalConfig(**base, **extra), out=io.StringIO()).metrics["Test"]
        for device in ({"gpu": [0]}, {"gpu": [0], "mix_cpu_gpu": True}):
            assert eval_kge(EvalConfig(**base, **extra, **device), out=io.StringIO()).metrics["Test"] == plain


@pytest.mark.multiprocess
def test_two_gpus_with_relation_partitioning_and_forced_syncs(tmp_path, on_cpu):
    """--gpu 0 1: two processes, each keeping the relation rows it alone trains (--rel_part:
    one relation each here) on its device, waiting for the other every 50 steps, with
    asynchronous updates; the test ranks the relation rows they wrote back."""
    log = io.StringIO()
    res = train_kge(_config(tmp_path, gpu=[0, 1], rel_part=True, force_sync_interval=50, async_update=True,
                            valid=True, eval_interval=150), out=log)
    assert res.metrics["Test"]["MRR"] > 0.8 and "Valid (step 300)" in res.metrics
    assert "[1][Train](300/300)" in log.getvalue()  # the second process, on the second device
    assert multiprocessing.active_children() == []
    initial = train_kge(_config(tmp_path, max_step=1, lr=1e-9, test=False), out=io.StringIO())  # as initialised
    moved = np.abs(_tables(res)["relation"] - _tables(initial)["relation"]).max(1)
    assert (moved > 0.1).all()  # both relations, each trained by one process only, were written back


@pytest.mark.multiprocess
def test_dist_train_on_the_device_path(tmp_path, monkeypatch):
    """`kge dist-train --gpu 0` on two loopback machines, one trainer each on its machine's
    device, ranking across both machines' shards."""
    import os
    import re

    from leaks import new_session
    from test_kge_dist import COMMON
    from test_kge_train import planted_pairs

    from distgraph.cluster.hosts import free_ports

    files = planted_pairs(tmp_path, n=400, held_out=60)
    data = ["--dataset", "planted", "--data_path", str(tmp_path), "--format", "raw_udd_hrt", "--data_files", *files]
    env = {"OMP_NUM_THREADS": "1", "DISTGRAPH_SESSION": new_session(), "PATH": "/usr/bin:/bin", GPU_TYPE_ENV: "cpu",
           **{k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ}}

    def cli(*args):
        done = subprocess.run([sys.executable, "-m", "distgraph.cli.main", *args], cwd=tmp_path, capture_output=True,
                              text=True, timeout=300, env=env)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        return done

    cli("kge", "partition", *data, "-k", "2", "--part_method", "metis")
    (tmp_path / "ip_config.txt").write_text("".join(f"127.0.0.1 {p} 1\n" for p in free_ports("127.0.0.1", 2)))
    done = cli("kge", "dist-train", *data, *COMMON, "--path", str(tmp_path), "--ip_config",
               str(tmp_path / "ip_config.txt"), "--gpu", "0", "--async_update", "--max_step", "300", "--test",
               "--no_save_emb")
    mrr = float(re.search(r"Test average MRR : ([\d.]+)", done.stdout).group(1))
    assert mrr > 0.8, done.stdout[-2000:]
