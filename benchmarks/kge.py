"""KGE benchmark on FB15k-237, TransE_l2 with DGL-KE's settings (dim 200, batch 1000, 200
negatives, -adv), all measured in one run on this machine:

- `kge train --num_proc 2` (single machine);
- `kge dist-train` on 2 machines on this host (1 server + 1 trainer each, METIS partition),
  the same total positive triples (each trainer runs --max_step steps), with
  DISTGRAPH_HOST_SHM=0: rows of the other machine travel over loopback TCP as they would
  between hosts, instead of being read in its shared memory;
- the same distributed job over a random partition (for the entity rows pulled from the
  other machine per step; a short run);
- DGL-KE 0.1.2 with the same flags, through `--peer_script` (../shared/peers/kge/run_dglke.sh)
  when given; otherwise its figures are printed as "recorded" and not scored;
- the peak memory (RSS, and its private part) of every process of a short distributed job
  on a synthetic KG whose entity table is large (1M entities x 200 floats = 763 MiB), with
  and without `--test`, against the same job on a small table: ranking where the rows live
  adds at most a block of temporaries, and no process gathers the table.

Prints `key: value` lines (throughput, test metrics, ratios, targets).

With `--measure limits`, instead: the training step of TransE_l2 and RotatE at DGL-KE's
dimension 400 (`STEP_RECIPES`) against its limit, the same batch arithmetic (scores, loss,
gradients, row-wise Adagrad updates) in a tight torch loop on preloaded tensors with no
sampling and no table traffic (`--role limit`), alternating, `--rounds` each: one process
(`kge train --num_proc 1`, its steps/s once warm, and the whole command's wall time) against
one limit loop; and per trainer of `kge dist-train` on 2 machines on this host (rows of the
other machine over loopback TCP) against two limit loops run at once, as the two trainers run.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/kge.py [--max_step 8000] \\
        [--peer_script ../shared/peers/kge/run_dglke.sh]
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/kge.py --measure limits [--rounds 3] [--max_step 1000]
"""

from __future__ import annotations

import argparse
import datetime
import io
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FLAGS = ["--model_name", "TransE_l2", "--hidden_dim", "200", "--gamma", "19.9", "--lr", "0.25", "--batch_size", "1000",
         "--neg_sample_size", "200", "-adv", "--regularization_coef", "1e-9", "--num_thread", "1",
         "--batch_size_eval", "16", "--log_interval", "1000"]
# DGL-KE 0.1.2 with these flags, 8000 steps, 2 processes, on this machine kind (../shared/peers/README.md)
RECORDED_DGLKE = {"train_seconds": 342.0, "test_seconds": 55.0, "MRR": 0.267}
# DGL-KE's FB15k recipes at dimension 400 (with -adv, norm-3 regularisation), for the step
# against its limit
STEP_RECIPES = {
    "TransE_l2": {"hidden_dim": 400, "gamma": 19.9, "lr": 0.25, "batch_size": 1000, "neg_sample_size": 200,
                  "regularization_coef": 1e-9, "double_ent": False},
    "RotatE": {"hidden_dim": 400, "gamma": 12.0, "lr": 0.009, "batch_size": 1024, "neg_sample_size": 256,
               "regularization_coef": 1e-7, "double_ent": True},
}


def recipe_flags(recipe: dict) -> list[str]:
    flags = [f"--{k}={v}" for k, v in recipe.items() if k != "double_ent"]
    return flags + ["-adv"] + (["-de"] if recipe["double_ent"] else [])


from common import loopback_ip_config, report, report_load, report_ratio  # noqa: E402

def cli(args: list[str], cwd: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "distgraph.cli.main", *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"distgraph {' '.join(args[:2])} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done.stdout


def figures(out: str) -> dict[str, float]:
    got = {}
    m = re.search(r"training takes ([\d.]+) seconds(?: \(([\d,]+) positive triples/s\))?", out)  # DGL-KE: no rate
    if m:
        got["train_seconds"] = float(m.group(1))
        if m.group(2):
            got["triples_per_s"] = float(m.group(2).replace(",", ""))
    m = re.search(r"testing takes ([\d.]+) seconds", out)
    if m:
        got["test_seconds"] = float(m.group(1))
    for k in ("MRR", "MR", "HITS@1", "HITS@3", "HITS@10"):
        m = re.search(rf"Test average {k} : ([\d.]+)", out)
        if m:
            got[k] = float(m.group(1))
    return got


def main() -> int:
    os.environ["DISTGRAPH_HOST_SHM"] = "0"  # the distributed runs move rows as between hosts
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data_path", default=str(REPO.parent / "shared" / "data"))
    ap.add_argument("--max_step", type=int, default=8000)
    ap.add_argument("--peer_script", default=None, help="../shared/peers/kge/run_dglke.sh, to measure DGL-KE too")
    ap.add_argument("--measure", choices=["recipe", "limits"], default="recipe",
                    help="recipe: the figures against DGL-KE; limits: the step against its arithmetic alone")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds of ours and the limit (limits)")
    ap.add_argument("--rotate_steps", type=int, default=8,
                    help="RotatE's steps per run (limits): at dimension 400 a step takes seconds on a CPU")
    ap.add_argument("--role", choices=["limit"], help=argparse.SUPPRESS)
    ap.add_argument("--model_name", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.role == "limit":
        print(json.dumps({"steps_per_s": limit_loop(args.data_path, args.model_name, args.max_step)}), flush=True)
        return 0
    if not (Path(args.data_path) / "FB15k-237" / "train.txt").is_file():
        raise SystemExit(f"FB15k-237 is not under {args.data_path}")
    report("date", datetime.datetime.now().isoformat(timespec="seconds"))
    report("machine", f"{platform.machine()}, {os.cpu_count()} cores, {platform.platform()}")
    report("command", " ".join(sys.argv))
    if args.measure == "limits":
        report_load("before")
        step_limits(args)
        report_load("after")
        return 0
    steps = str(args.max_step)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        data = ["--dataset", "FB15k-237", "--data_path", str(work / "data")]
        (work / "data").mkdir()
        shutil.copytree(Path(args.data_path) / "FB15k-237", work / "data" / "FB15k-237")

        single = figures(cli(["kge", "train", *data, *FLAGS, "--max_step", steps, "--num_proc", "2", "--test",
                              "--no_save_emb"], work))
        for k, v in single.items():
            report(f"single_{k}", v)

        def dist(method: str, max_step: str, test: bool) -> tuple[dict, float]:
            out = cli(["kge", "partition", *data, "-k", "2", "--part_method", method], work)
            cross = float(re.search(r"different partitions: ([\d.]+)%", out).group(1)) / 100
            ip = loopback_ip_config(work / "ip_config.txt", 2, 1)
            log = cli(["kge", "dist-train", *data, *FLAGS, "--max_step", max_step, "--path", str(work),
                       "--ip_config", str(ip), "--num_client_proc", "1", "--no_save_emb",
                       *(["--test"] if test else [])], work)
            return figures(log), cross

        metis, metis_cross = dist("metis", steps, True)
        for k, v in metis.items():
            report(f"dist_metis_{k}", v)
        report("dist_metis_cross_partition_triples", metis_cross)
        random_run = dist_rows(work, data, "random")
        metis_rows = dist_rows(work, data, "metis")
        report("dist_random_remote_entity_rows_per_step", random_run)
        report("dist_metis_remote_entity_rows_per_step", metis_rows)
        report("remote_rows_metis_over_random", metis_rows / random_run)
        report("target_remote_rows_metis_le_0.5x_random", "met" if metis_rows <= 0.5 * random_run else "missed")
        ratio = metis["triples_per_s"] / single["triples_per_s"]
        report("dist_over_single_throughput", ratio)
        report("target_dist_throughput_ge_0.7x_single", "met" if ratio >= 0.7 else "missed")
        report("dist_minus_single_mrr", metis["MRR"] - single["MRR"])
        report("target_dist_mrr_within_0.01", "met" if abs(metis["MRR"] - single["MRR"]) <= 0.01 else "missed")

        small, trained = eval_memory(work, 10_000), eval_memory(work, 1_000_000, test=False)
        tested = eval_memory(work, 1_000_000)
        share = tested["table_bytes"] / 2
        report("eval_entity_table_MB", tested["table_bytes"] / 2**20)
        report("eval_table_share_per_machine_MB", share / 2**20)
        report("eval_peak_rss_MB_small_table", small["peak_rss"] / 2**20)
        report("eval_peak_rss_MB_without_test", trained["peak_rss"] / 2**20)
        report("eval_peak_rss_MB", tested["peak_rss"] / 2**20)
        added = tested["peak_rss"] - trained["peak_rss"]
        private = tested["peak_private"] - small["peak_private"]
        report("eval_added_by_test_MB", added / 2**20)
        report("eval_private_growth_over_small_table_MB", private / 2**20)
        # the table lives in shared memory, a machine's share in its processes; ranking adds at
        # most a block of temporaries, and no process holds a private copy of even its share
        met = added <= 64 * 2**20 and private <= 0.5 * share
        report("target_eval_peak_le_table_share_plus_constant", "met" if met else "missed")

        if args.peer_script:
            t0 = time.perf_counter()
            done = subprocess.run(["bash", args.peer_script, str(work / "data" / "FB15k-237"), steps, "200", "2"],
                                  capture_output=True, text=True)
            peer = figures(done.stdout + done.stderr)
            report("dglke_wall_seconds", time.perf_counter() - t0)
            for k, v in peer.items():
                report(f"dglke_{k}", v)
            if "train_seconds" in peer:
                dglke_rate = 2 * args.max_step * 1000 / peer["train_seconds"]
                report("dglke_triples_per_s", dglke_rate)
                report("single_over_dglke_throughput", single["triples_per_s"] / dglke_rate)
        else:
            for k, v in RECORDED_DGLKE.items():
                report(f"dglke_{k}_recorded", v)
    return 0


def limit_loop(data_path: str, model_name: str, steps: int) -> float:
    """Steps/s of the step's arithmetic alone: batches drawn beforehand, both tables plain
    tensors in this process, each step a gather of its rows, the scores, loss and gradients
    (autograd over the model's score functions), the norm-3 penalty's gradient, and row-wise
    Adagrad on the summed gradients of its distinct rows (the row kernel the servers use)."""
    import torch

    from distgraph.kge.data.formats import load_dataset
    from distgraph.kge.models import create_model
    from distgraph.kge.train.loss import add_regularization_grad, kge_loss
    from distgraph.kge.train.sampler import ChunkSampler
    from distgraph.kvstore import kernels
    from distgraph.malloc import keep_freed_memory
    from distgraph.optim.sparse import coalesce

    torch.set_num_threads(1)
    keep_freed_memory()  # as our KGE workers do: no page faults from returning and retaking freed memory
    cfg = STEP_RECIPES[model_name]
    data = load_dataset(data_path, "FB15k-237")
    model = create_model(model_name, cfg["hidden_dim"], cfg["gamma"], cfg["double_ent"])
    gen = torch.Generator().manual_seed(0)
    tables = [(torch.rand(n, dim, generator=gen) * 2 - 1) * model.emb_init
              for n, dim in ((data.n_entities, model.entity_dim), (data.n_relations, model.relation_dim))]
    states = [torch.zeros(len(t)) for t in tables]
    sampler = ChunkSampler(torch.from_numpy(data.train), (0, data.n_entities), cfg["batch_size"],
                           cfg["neg_sample_size"], seed=1)
    batches = [next(sampler) for _ in range(min(steps, 200))]

    def update(table, state, ids, grad):  # the distinct rows' summed gradients, one row-wise Adagrad pass
        kernels.row_adagrad(table, state, *coalesce(ids, grad), cfg["lr"])

    def step(b):
        n, chunks = len(b.h), b.num_chunks
        ent_ids = torch.cat([b.h, b.t, b.neg.reshape(-1)])
        ent = tables[0].index_select(0, ent_ids).requires_grad_()
        rel = tables[1].index_select(0, b.r).requires_grad_()
        h, t, neg = ent.split([n, n, len(ent_ids) - 2 * n])
        pos = model.pair(h, (rel,), t)
        neg, by_chunk = neg.view(chunks, -1, ent.shape[1]), (rel.view(chunks, n // chunks, -1),)
        scores = (model.heads(neg, by_chunk, t.view(chunks, n // chunks, -1)) if b.corrupt_head
                  else model.tails(h.view(chunks, n // chunks, -1), by_chunk, neg))
        loss, _, _ = kge_loss(pos, scores, adversarial=True)
        loss.backward()
        with torch.no_grad():
            for x, ids, table, state in ((ent, ent_ids, tables[0], states[0]), (rel, b.r, tables[1], states[1])):
                add_regularization_grad(x, x.grad, cfg["regularization_coef"], 3)
                update(table, state, ids, x.grad)

    step(batches[0])  # warm-up
    start = time.perf_counter()
    for i in range(steps):
        step(batches[i % len(batches)])
    return steps / (time.perf_counter() - start)


def step_limits(args: argparse.Namespace) -> None:
    """Each model's step, alone and per trainer of a 2-machine job, against its limit, alternating."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        data = ["--dataset", "FB15k-237", "--data_path", str(work / "data")]
        (work / "data").mkdir()
        shutil.copytree(Path(args.data_path) / "FB15k-237", work / "data" / "FB15k-237")
        cli(["kge", "partition", *data, "-k", "2", "--part_method", "metis"], work)

        def limit(model: str, processes: int, steps: int) -> float:
            """The slowest of `processes` limit loops run at once."""
            cmd = [sys.executable, __file__, "--role", "limit", "--model_name", model, "--max_step",
                   str(steps), "--data_path", args.data_path]
            procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) for _ in range(processes)]
            rates = [json.loads(p.communicate()[0].splitlines()[-1])["steps_per_s"] for p in procs]
            if any(p.returncode for p in procs):
                raise SystemExit("a limit loop failed")
            return min(rates)

        def warm_rate(log: str) -> float:
            """The slowest trainer's steps/s over the second half of its steps (once warm)."""
            rates = {}
            for rank, rate in re.findall(r"\[(\d+)\]\[Train\]\(\d+/\d+\).*?([\d.]+) steps/s", log):
                rates[rank] = float(rate)  # the last interval of each trainer
            return min(rates.values())

        for model, recipe in STEP_RECIPES.items():
            steps = args.rotate_steps if model == "RotatE" else args.max_step
            flags = recipe_flags(recipe)
            common = [*data, "--num_thread", "1", "--max_step", str(steps), "--log_interval",
                      str(max(1, steps // 2)), "--no_save_emb"]
            runs = {"single": ([], [], []), "dist": ([], [], [])}  # ours, limit, whole command seconds
            for r in range(args.rounds):
                for kind in ("single", "dist")[r % 2:] + ("single", "dist")[:r % 2]:
                    ours, lim, wall = runs[kind]
                    sides = [("ours", None), ("limit", None)]
                    for side, _ in sides[r % 2:] + sides[:r % 2]:
                        if side == "limit":
                            lim.append(limit(model, 1 if kind == "single" else 2, steps))
                            continue
                        t0 = time.perf_counter()
                        if kind == "single":
                            log = cli(["kge", "train", "--model_name", model, *flags, *common, "--num_proc", "1"],
                                      work)
                        else:
                            ip = loopback_ip_config(work / "ip_config.txt", 2, 1)
                            log = cli(["kge", "dist-train", "--model_name", model, *flags, *common, "--path",
                                       str(work), "--ip_config", str(ip), "--num_client_proc", "1"], work)
                        wall.append(time.perf_counter() - t0)
                        ours.append(warm_rate(log))
            for kind, (ours, lim, wall) in runs.items():
                key = f"{model}_{kind}{'_per_trainer' if kind == 'dist' else ''}_steps_per_s"
                report_ratio(key, ours, lim, 0.8)
                report(f"{model}_{kind}_whole_command_seconds_runs", " ".join(f"{w:.1f}" for w in wall))
                report(f"{model}_{kind}_whole_command_seconds_for_{steps}_steps", statistics.median(wall))


def eval_memory(work: Path, entities: int, test: bool = True) -> dict[str, float]:
    """Peak RSS (and its private part) of the processes of a short 2-machine job with --test
    on a synthetic KG of `entities` entities, sampled every 0.1 s; the entity table's bytes."""
    import numpy as np
    import psutil

    data = work / f"syn{entities}"
    data.mkdir(exist_ok=True)
    gen = np.random.default_rng(0)
    heads = gen.permutation(entities)  # every entity in a training triple
    for name, n in (("train.txt", entities), ("valid.txt", 100), ("test.txt", 100)):
        h = heads if name == "train.txt" else gen.integers(0, entities, n)
        rows = np.stack([h, gen.integers(0, 10, n), gen.integers(0, entities, n)], 1)
        (data / name).write_text("".join(f"e{a}\tr{b}\te{c}\n" for a, b, c in rows.tolist()))
    spec = ["--dataset", data.name, "--data_path", str(data), "--format", "raw_udd_hrt",
            "--data_files", "train.txt", "valid.txt", "test.txt"]
    cli(["kge", "partition", *spec, "-k", "2", "--part_method", "random"], work)
    ip = loopback_ip_config(work / "ip_config.txt", 2, 1)
    job = subprocess.Popen([sys.executable, "-m", "distgraph.cli.main", "kge", "dist-train", *spec, *FLAGS,
                            "--max_step", "20", "--path", str(work), "--ip_config", str(ip),
                            "--num_client_proc", "1", "--no_save_emb", *(["--test"] if test else [])], cwd=work,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peak: dict[int, tuple[str, int, int]] = {}
    root = psutil.Process(job.pid)
    while job.poll() is None:
        try:
            procs = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            break
        for p in procs:
            try:
                mem, name = p.memory_info(), " ".join(p.cmdline()[1:3])
            except psutil.Error:
                continue
            old = peak.get(p.pid, (name, 0, 0))
            peak[p.pid] = (name, max(old[1], mem.rss), max(old[2], mem.rss - mem.shared))
        time.sleep(0.1)
    out = job.stdout.read()
    if job.wait() != 0 or (test and "Test average MRR" not in out):
        raise SystemExit(f"the evaluation memory job failed:\n{out[-3000:]}")
    return {"table_bytes": entities * 200 * 4, "peak_rss": max(v[1] for v in peak.values()),
            "peak_private": max(v[2] for v in peak.values())}


def dist_rows(work: Path, data: list[str], method: str) -> float:
    """Entity rows a trainer pulled from the other machine per step, in a short distributed run."""
    cli(["kge", "partition", *data, "-k", "2", "--part_method", method], work)
    ip = loopback_ip_config(work / "ip_config.txt", 2, 1)
    from distgraph.kge import TrainConfig
    from distgraph.kge.pipeline import DistOptions, dist_train_kge

    cfg = TrainConfig(model_name="TransE_l2", dataset="FB15k-237", data_path=str(work / "data"), hidden_dim=200,
                      gamma=19.9, lr=0.25, batch_size=1000, neg_sample_size=200, neg_adversarial_sampling=True,
                      regularization_coef=1e-9, max_step=300, log_interval=1000, no_save_emb=True)
    res = dist_train_kge(cfg, DistOptions(str(work), str(ip), 1), out=io.StringIO())
    return res.remote_rows_per_step


if __name__ == "__main__":
    sys.exit(main())
