"""What a job writes holds its user's model and data: partitions (from the command and from
`partition_graph` called under a permissive umask), copied workspaces and checkpoints are
readable by their owner only (files 0600, folders 0700), and the caller's umask is left as it was."""

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from distgraph.cli.main import main
from distgraph.data import save_npz
from distgraph.partition import partition_graph


@pytest.fixture
def permissive_umask():
    old = os.umask(0o022)
    yield
    os.umask(old)


def _modes(root: Path) -> dict[str, int]:
    """Permission bits of `root` and everything under it."""
    return {str(p.relative_to(root.parent)): stat.S_IMODE(p.stat().st_mode) for p in [root, *root.rglob("*")]}


def _assert_private(root: Path) -> None:
    modes = _modes(root)
    assert len(modes) > 3
    for name, mode in modes.items():
        is_dir = (root.parent / name).is_dir()
        assert mode & 0o077 == 0, f"{name} is {oct(mode)}: readable by others"
        assert mode == (0o700 if is_dir else 0o600), f"{name} is {oct(mode)}"


def test_partitions_are_private_from_the_command_and_the_library(sbm, tmp_path, permissive_umask):
    partition_graph(sbm, "g", 2, tmp_path / "lib", part_method="random")
    _assert_private(tmp_path / "lib")
    assert os.umask(0o022) == 0o022  # the library call left the caller's umask alone

    save_npz(sbm, tmp_path / "g.npz")
    # the command in a process of its own, as a user runs it, under a permissive umask
    done = subprocess.run([sys.executable, "-m", "distgraph.cli.main", "partition", "--input", str(tmp_path / "g.npz"),
                           "--graph_name", "g", "--num_parts", "2", "--part_method", "random", "--out",
                           str(tmp_path / "cmd")], capture_output=True, text=True, timeout=300,
                          preexec_fn=lambda: os.umask(0o022))
    assert done.returncode == 0, done.stderr
    _assert_private(tmp_path / "cmd")


def test_copied_workspaces_are_private(sbm, tmp_path, permissive_umask):
    partition_graph(sbm, "g", 2, tmp_path / "parts", part_method="random")
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "train.py").write_text("print('hi')\n")
    os.chmod(scripts / "train.py", 0o644)  # a user's script, world-readable where it is
    ip_config = tmp_path / "ip_config.txt"
    ip_config.write_text("127.0.0.1 30050\n127.0.0.1 30060\n")
    workspace = tmp_path / "ws"
    assert main(["copy", "--ip_config", str(ip_config), "--workspace", str(workspace), "--rel_data_path", "data",
                 "--part_config", str(tmp_path / "parts" / "g.json"), "--script_folder", str(scripts)]) == 0
    assert (workspace / "scripts" / "train.py").is_file() and (workspace / "data" / "g.json").is_file()
    _assert_private(workspace)
