"""Project errors in a job's processes: a launched process writes its traceback and its message
as marked lines; the launcher keeps the tracebacks in a log and shows each message once."""

import subprocess
import sys

from distgraph.cluster.error_lines import ERROR, TRACEBACK, parse
from distgraph.launch.failures import Failures

RAISE = """
import sys
from distgraph.cluster import error_lines
from distgraph.errors import InputError
error_lines.install()
if sys.argv[1] == "ours":
    raise InputError("parts/mine.json holds graph 'mine', not 'Mine'")
raise ValueError("not ours")
"""


def test_a_project_error_is_one_marked_line_after_its_marked_traceback():
    ours = subprocess.run([sys.executable, "-c", RAISE, "ours"], capture_output=True, text=True)
    lines = ours.stderr.splitlines()
    assert ours.returncode == 1 and lines[-1] == f"{ERROR}parts/mine.json holds graph 'mine', not 'Mine'"
    assert lines[0] == f"{TRACEBACK}Traceback (most recent call last):" and all(
        line.startswith(TRACEBACK) for line in lines[:-1])
    other = subprocess.run([sys.executable, "-c", RAISE, "other"], capture_output=True, text=True)
    assert other.stderr.splitlines()[-1] == "ValueError: not ours" and ERROR not in other.stderr


def test_the_launcher_shows_each_message_once_and_keeps_the_tracebacks(tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    failures = Failures("s1")
    shown = [failures.route(label, text) for label, text in [
        ("0/trainer/0", f"[rank0]: {TRACEBACK}Traceback (most recent call last):"),  # torch's excepthook prefix
        ("0/trainer/0", f"[rank0]: {ERROR}no training nodes"),
        ("1/trainer/1", f"{TRACEBACK}Traceback (most recent call last):"),
        ("1/trainer/1", f"{ERROR}no training nodes"),
        ("1/trainer/1", "epoch 0"),
    ]]
    assert shown == [None, "error: no training nodes", None, None, "epoch 0"]
    assert parse("[rank3]: plain") is None
    summary = failures.summary({"0/server/0": 1})
    assert summary == ["failed with the error above: 0/trainer/0, 1/trainer/1", "failed: 0/server/0 (exit code 1)",
                       f"their tracebacks: {tmp_path / 'distgraph-s1.log'}"]
    assert (tmp_path / "distgraph-s1.log").read_text().count("Traceback") == 2
