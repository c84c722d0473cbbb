"""Overheads of `distgraph kge` on FB15k-237, TransE_l2 with DGL-KE's recipe (dim 200, batch
1000, 200 negatives, -adv), --max_step 1000 --num_proc 2, without --test (ranking the test
set is work, not overhead), saving the embeddings as the recipe does:

- start to first step: from starting the command to the moment every trainer trains (the
  arrival of the `training takes S seconds` line, printed at the last trainer's last step,
  minus S, which counts from the moment every trainer had started);
- last step to exit: from that line's arrival to the command's exit: the finite check,
  saving, every process ending;
- bad input: a few of the errors the command line and the input files can show, each from
  starting the command to its exit (code 2);

each for --runs runs, with the load average around them (the machine is shared).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/kge_startup.py --data_path /work/shared/data [--runs 3]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import report

REPO = Path(__file__).resolve().parents[1]
RECIPE = ["--model_name", "TransE_l2", "--hidden_dim", "200", "--gamma", "19.9", "--lr", "0.25", "--batch_size",
          "1000", "--neg_sample_size", "200", "-adv", "--regularization_coef", "1e-9", "--num_thread", "1",
          "--batch_size_eval", "16"]
CLI = [sys.executable, "-m", "distgraph.cli.main"]


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def timed_run(argv: list[str], cwd: Path) -> tuple[float, float, float]:
    """(start to every trainer training, last step to exit, whole run) in seconds, from the
    arrival times of the run's own lines."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([*CLI, *argv], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    trained = training = None
    tail = []
    for line in proc.stdout:
        now = time.perf_counter()
        tail = (tail + [line])[-30:]
        found = re.search(r"training takes ([\d.]+) seconds", line)
        if found:
            trained, training = now, float(found.group(1))
    code = proc.wait()
    end = time.perf_counter()
    if code or trained is None:
        raise SystemExit(f"kge train failed (exit code {code}):\n{''.join(tail)}")
    return trained - training - t0, end - trained, end - t0


def error_latency(argv: list[str], cwd: Path) -> float:
    t0 = time.perf_counter()
    done = subprocess.run([*CLI, *argv], cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if done.returncode != 2 or not done.stderr.startswith("distgraph kge: error:"):
        raise SystemExit(f"expected one error and exit code 2 from {argv}, got {done.returncode}: {done.stderr}")
    return seconds


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data_path", default=str(REPO.parent / "shared" / "data"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--max_step", type=int, default=1000)
    args = ap.parse_args()
    data = Path(args.data_path)
    if not (data / "FB15k-237" / "train.txt").is_file():
        raise SystemExit(f"FB15k-237 is not under {data}")
    report("date", datetime.datetime.now().isoformat(timespec="seconds"))
    report("machine", f"{platform.machine()}, {os.cpu_count()} cores, {platform.platform()}")
    report("command", " ".join(sys.argv))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "ragged.txt").write_text("a\tr\tb\nb\tr\n")
        train = ["kge", "train", "--dataset", "FB15k-237", "--data_path", str(data), *RECIPE]
        bad = {"missing_file": ["kge", "train", "--format", "raw_udd_hrt", "--data_path", str(work), "--dataset", "x",
                                "--data_files", "missing.txt"],
               "ragged_line": ["kge", "train", "--format", "raw_udd_hrt", "--data_path", str(work), "--dataset", "x",
                               "--data_files", "ragged.txt"],
               "bad_flags": [*train, "--model_name", "RotatE"],
               "missing_model": ["kge", "eval", "--model_path", str(work / "none")]}
        report("load_before", load())
        for name, argv in bad.items():
            times = [error_latency(argv, work) for _ in range(args.runs)]
            report(f"error_{name}_s", statistics.median(times))
        starts, ends = [], []
        for i in range(args.runs):
            report(f"run{i}_load_before", load())
            start, end, whole = timed_run([*train, "--max_step", str(args.max_step), "--num_proc", "2",
                                           "--save_path", str(work / "ckpts")], work)
            starts.append(start)
            ends.append(end)
            report(f"run{i}_start_to_first_step_s", start)
            report(f"run{i}_last_step_to_exit_s", end)
            report(f"run{i}_whole_s", whole)
        report("load_after", load())
        report("start_to_first_step_s_median", statistics.median(starts))
        report("last_step_to_exit_s_median", statistics.median(ends))
        report("target_start_le_3s", "met" if statistics.median(starts) <= 3 else "missed")
        report("target_exit_le_3s", "met" if statistics.median(ends) <= 3 else "missed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
