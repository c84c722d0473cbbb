"""The GraphSAGE example resumes from its checkpoints: a run killed mid-way (its launcher
SIGKILLed) and resumed ends with the same model, bit for bit, as an uninterrupted run with
the same seed, standalone and on two loopback machines with sampler processes."""

import re
import subprocess
import sys
import time
from pathlib import Path

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
    command = f"{sys.executable} {EXAMPLE} {ARGS} --num_epochs 4"
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

    resumed = launches(tmp_path, parts[2], [1, 1], f"{resumable} --resume", num_samplers=1)
    assert resumed.wait(300) == 0, resumed.output[-3000:]
    assert "resumed from" in resumed.output
    assert _digest(resumed.output) == _digest(whole.output)
    done = _epochs(resumed.output)
    assert done and done == _epochs(whole.output)[-len(done):]
