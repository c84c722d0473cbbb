"""KGE on CUDA (`make test-gpu`): `kge train --gpu`, with --mix_cpu_gpu, --async_update and two
GPUs under --rel_part, learns as the CPU run of the same seed does, and `kge eval --gpu`
ranks as the CPU does. Skipped where torch finds no CUDA device."""

import io
import multiprocessing

import pytest
import torch
from test_kge_train import _config

from distgraph.kge import EvalConfig, eval_kge, train_kge
from distgraph.kge.train.device import resident, to_device

pytestmark = pytest.mark.gpu
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)


def _losses(log: io.StringIO) -> list[float]:
    return [float(line.split("average loss: ")[1].split(",")[0]) for line in log.getvalue().splitlines()
            if "average loss: " in line]


def test_rows_travel_to_the_gpu_and_back():
    x = torch.randn(1000, 16)
    on_gpu = to_device(x, torch.device("cuda", 0))
    assert on_gpu.device.type == "cuda" and torch.equal(on_gpu.cpu(), x)
    assert resident(x, torch.device("cuda", 0)).device.type == "cuda"  # 64 kB fit


@pytest.mark.parametrize("flags", [{}, {"mix_cpu_gpu": True}, {"async_update": True},
                                   {"mix_cpu_gpu": True, "async_update": True}])
def test_training_on_a_gpu_learns_as_on_the_cpu(tmp_path, flags):
    settings = dict(max_step=300, log_interval=25, valid=True, eval_interval=150, no_save_emb=True)
    cpu_log, gpu_log = io.StringIO(), io.StringIO()
    cpu = train_kge(_config(tmp_path, **settings), out=cpu_log)
    gpu = train_kge(_config(tmp_path, gpu=[0], **settings, **flags), out=gpu_log)
    assert gpu.metrics["Test"]["MRR"] > 0.9 and abs(gpu.metrics["Test"]["MRR"] - cpu.metrics["Test"]["MRR"]) < 0.05
    for c, g in zip(_losses(cpu_log)[1:], _losses(gpu_log)[1:]):
        assert abs(g - c) < 0.1 * c


def test_eval_on_a_gpu_ranks_as_on_the_cpu(tmp_path):
    res = train_kge(_config(tmp_path, max_step=100, test=False), out=io.StringIO())
    base = dict(model_path=str(res.save_dir), batch_size_eval=16)
    for extra in ({}, {"neg_sample_size_eval": 20}):
        cpu = eval_kge(EvalConfig(**base, **extra), out=io.StringIO()).metrics["Test"]
        for device in ({"gpu": [0]}, {"gpu": [0], "mix_cpu_gpu": True}):
            gpu = eval_kge(EvalConfig(**base, **extra, **device), out=io.StringIO()).metrics["Test"]
            assert gpu.keys() == cpu.keys()
            for k in cpu:
                assert gpu[k] == pytest.approx(cpu[k], rel=1e-3), k


@pytest.mark.multiprocess
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="fewer than 2 CUDA devices")
def test_two_gpus_with_relation_partitioning(tmp_path):
    res = train_kge(_config(tmp_path, gpu=[0, 1], rel_part=True, force_sync_interval=50, async_update=True),
                    out=io.StringIO())
    assert res.metrics["Test"]["MRR"] > 0.8
    assert multiprocessing.active_children() == []


@pytest.mark.multiprocess
def test_two_processes_share_one_gpu(tmp_path):
    """--gpu 0 --num_proc 2: both processes on GPU 0, the tables in CPU memory."""
    res = train_kge(_config(tmp_path, gpu=[0], num_proc=2, valid=True, eval_interval=300), out=io.StringIO())
    assert res.metrics["Test"]["MRR"] > 0.8 and "Valid (step 300)" in res.metrics
    assert multiprocessing.active_children() == []
