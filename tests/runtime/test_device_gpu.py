"""On a CUDA device (`make test-gpu`; skipped without one): DistEmbedding trained through the
GPU, a trainer's device and DDP backend, distgraph's examples with `--num_gpus 1` (standalone
and launched), and DGL v2.1.0's GraphSAGE and RGCN examples with `--num_gpus 1` and their
import lines changed (with `DGL_GIT_DIR`, as tests/runtime/test_dgl_examples.py runs them)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import distgraph as dg
from distgraph.distributed import devices

from .conftest import child_env
from .test_device_embedding import dense_adagrad_reference, standalone, trained_both_ways  # noqa: F401 (fixture)
from .test_dgl_examples import (DGL_GIT_DIR, ENTITY, MAG, PRODUCTS, RGCN, RGCN_EXP_PART, SAGE, SAGE_NC, SAGE_PART,
                                SPARSE, TRAINED, Case, Runs, datasets, examples)  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="torch finds no CUDA device")]
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SAGE_EXAMPLE = EXAMPLES / "graphsage" / "train_dist.py"
RGCN_EXAMPLE = EXAMPLES / "rgcn" / "entity_classify_dist.py"
SAGE_ARGS = "--graph_name g --num_epochs 3 --batch_size 100 --fan_out 4,4 --num_hidden 16 --seed 7"
RGCN_ARGS = ("--graph-name mag --fanout 5,5 --batch-size 128 --n-hidden 16 --eval-batch-size 500 --dropout 0.2 "
             "--use-self-loop --n-bases 2 --n-epochs 2 --layer-norm --sparse-embedding --sparse-lr 0.06")
BEST = re.compile(r"best val acc ([\d.]+) at epoch \d+; test acc ([\d.]+)")


def test_an_embedding_trained_on_the_gpu_equals_the_cpu_one(standalone):  # noqa: F811
    out = trained_both_ways(standalone, torch.device("cuda", 0))
    (gpu_weights, gpu_losses), (cpu_weights, cpu_losses) = out["device"], out["plain"]
    assert all(torch.allclose(x, y, atol=1e-5) for x, y in zip(gpu_weights, cpu_weights))
    assert all(torch.allclose(x, y, rtol=1e-5) for x, y in zip(gpu_losses, cpu_losses))
    assert torch.allclose(gpu_weights[0], dense_adagrad_reference(standalone), atol=1e-5)


def test_a_trainer_with_a_gpu_of_its_own_takes_it_and_nccl(standalone):  # noqa: F811
    device = devices.trainer_device(1)
    assert device == torch.device("cuda", 0) and torch.cuda.current_device() == 0
    assert devices.ddp_backend(device) == devices.GPU_BACKEND


def _run(argv: list) -> str:
    done = subprocess.run([sys.executable, *map(str, argv)], env=child_env(), capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def test_graphsage_example_trains_on_the_gpu_as_on_the_cpu(parts, tmp_path):
    """Same seed, same batches: accuracies close to the CPU run's (GPU sums round differently);
    the embeddings are written from the GPU's inference."""
    base = [SAGE_EXAMPLE, *SAGE_ARGS.split(), "--part_config", parts[1]]
    cpu = _run(base)
    gpu = _run([*base, "--num_gpus", "1", "--save_embeddings", tmp_path / "emb"])
    assert "trainer 0 trains on cuda:0" in gpu and "trainer 0 trains on cpu" in cpu
    (cpu_val, cpu_test), (gpu_val, gpu_test) = (map(float, BEST.search(out).groups()) for out in (cpu, gpu))
    assert abs(cpu_val - gpu_val) < 0.05 and abs(cpu_test - gpu_test) < 0.05
    emb = dg.load_results(tmp_path / "emb", numpy=True)
    assert emb["emb"].shape == (len(emb["node_id"]), 16) and abs(emb["emb"]).sum() > 0


@pytest.mark.multiprocess
@pytest.mark.parametrize("machines, trainers, backend", [([1], 1, devices.GPU_BACKEND), ([1, 1], 1, "gloo"),
                                                         ([1], 2, "gloo")])
def test_graphsage_example_launched_on_the_gpu(parts, tmp_path, launches, machines, trainers, backend):
    """One trainer on the machine's GPU: NCCL; trainers sharing the one GPU: gloo (NCCL refuses it)."""
    job = launches(tmp_path, parts[len(machines)], machines,
                   f"{sys.executable} {SAGE_EXAMPLE} {SAGE_ARGS} --num_gpus 1", num_trainers=trainers)
    assert job.wait(600) == 0, job.output[-3000:]
    assert f"trainer 0 trains on cuda:0, DDP over {backend}" in job.output and BEST.search(job.output)
    assert job.left_behind() == ([], [])


def test_rgcn_example_trains_on_the_gpu_with_its_sparse_embeddings(mag_parts, tmp_path):
    out = _run([RGCN_EXAMPLE, *RGCN_ARGS.split(), "--conf-path", mag_parts[1], "--standalone", "--num-gpus", "1",
                "--save-embeddings", tmp_path / "emb"])
    assert "trainer 0 trains on cuda:0" in out
    moved = [float(x) for x in re.findall(r" ([\d.]+)", out.split("embeddings moved:")[1].splitlines()[0])]
    assert moved and all(m > 0 for m in moved)
    emb = dg.load_results(tmp_path / "emb", numpy=True)
    assert emb["emb"].shape[1] == 16


# the RGCN script with DGL's sparse embeddings (without --dgl-sparse, its GPU path moves torch's
# embeddings to the GPU and looks them up with the loader's CPU ids)
GPU_CASES = [Case("v2.1.0", SAGE_NC, SAGE + " --num_gpus 1", partition=(SAGE_PART, PRODUCTS)),
             Case("v2.1.0", ENTITY, RGCN + SPARSE + " --dgl-sparse --num_gpus 1", partition=(RGCN_EXP_PART, MAG),
                  samplers=1)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory, examples, datasets) -> Runs:  # noqa: F811
    return Runs(tmp_path_factory.mktemp("dgl_gpu_runs"), examples, datasets)


@pytest.mark.multiprocess
@pytest.mark.skipif(not DGL_GIT_DIR, reason="DGL_GIT_DIR does not name a DGL clone, which DGL's scripts are read from")
@pytest.mark.parametrize("case", GPU_CASES, ids=lambda c: c.args.replace(" ", ""))
def test_dgl_example_script_on_the_gpu(case, runs, launches):
    """DGL's own scripts on 2 loopback machines, both trainers on the GPU (DDP over gloo, as
    the scripts ask), as they run on the CPU."""
    code, output, work = runs.run(case, launches)
    assert code == 0, f"{case.script} --num_gpus 1 failed (output in {work}):\n{output[-4000:]}"
    assert TRAINED in output
