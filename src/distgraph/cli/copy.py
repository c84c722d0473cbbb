"""`distgraph copy`: copy each machine's partition, the configs and the scripts to its host
(DGL's tools/copy_files.py flags)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import InputError
from ..launch.ssh import SshOptions


def add_ssh_args(p: argparse.ArgumentParser) -> None:
    """`--ssh_port`, `--ssh_username`, `--ssh_key`, `--ssh_config` (shared with `launch`)."""
    p.add_argument("--ssh_port", type=int, default=22, help="ssh port of the other hosts")
    p.add_argument("--ssh_username", default="", help="user for ssh to the other hosts")
    p.add_argument("--ssh_key", default=None, help="private key for ssh to the other hosts (ssh -i)")
    p.add_argument("--ssh_config", default=None,
                   help="an ssh configuration file to use instead of ~/.ssh/config (ssh -F)")


def ssh_options(args: argparse.Namespace) -> SshOptions:
    """The ssh settings of the command line; a key or configuration file that does not exist is
    an error before any host is reached."""
    for flag, value in (("--ssh_key", args.ssh_key), ("--ssh_config", args.ssh_config)):
        if value is not None and not Path(value).expanduser().is_file():
            raise InputError(f"{flag} {value} does not exist (looked for {Path(value).expanduser().absolute()}); "
                             f"give the file's path")
    return SshOptions(args.ssh_port, args.ssh_username, args.ssh_key, args.ssh_config)


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "copy", help="copy partitions, configs and scripts to the hosts of ip_config",
        description="Copy to every host of IP_CONFIG what its machines need: its partitions, the partition "
                    "config and id maps (under WORKSPACE/REL_DATA_PATH), the ip_config file and the script folder. "
                    "Unchanged files are not sent again. See docs/launch.md.")
    p.add_argument("--ip_config", required=True, help="the machines (a local file)")
    p.add_argument("--workspace", required=True, help="the job's folder on every host")
    p.add_argument("--rel_data_path", required=True, help="folder inside the workspace for the partition")
    p.add_argument("--part_config", required=True, help="the partition config .json (a local file)")
    p.add_argument("--script_folder", default=None, help="a local folder of scripts, copied into the workspace")
    add_ssh_args(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..launch.copy import CopyOptions, copy

    copy(CopyOptions(args.ip_config, args.workspace, args.rel_data_path, args.part_config, args.script_folder,
                     ssh_options(args)))
    return 0
