"""`distgraph launch`: run a training script on every machine of ip_config (DGL launch.py's flags)."""

from __future__ import annotations

import argparse
import shlex

from ..launch import launch
from .copy import add_ssh_args, ssh_options


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "launch", help="start servers and trainers on every machine",
        description="Start NUM_SERVERS servers and NUM_TRAINERS trainers per machine of IP_CONFIG (locally for "
                    "this host's addresses, over ssh otherwise), prefix their output with [machine/role/rank], "
                    "and stop everything when one fails. See docs/launch.md.")
    p.add_argument("--workspace", required=True, help="directory every process runs in; relative config paths "
                                                      "are resolved in it")
    p.add_argument("--num_trainers", type=int, required=True, help="trainer processes per machine")
    p.add_argument("--num_servers", type=int, default=1, help="server processes per machine (an ip_config "
                                                              "NUM_SERVERS column overrides it)")
    p.add_argument("--num_samplers", type=int, default=0, help="sampler processes per trainer")
    p.add_argument("--part_config", required=True, help="partition config .json (in the workspace)")
    p.add_argument("--ip_config", default=None,
                   help="one `IP [PORT [NUM_SERVERS]]` line per machine (with --scheduler slurm: the file written "
                        "from the allocation's nodes, default ip_config.slurm-<job id>.txt)")
    p.add_argument("--scheduler", choices=("auto", "ssh", "slurm"), default="auto",
                   help="ssh: the hosts of --ip_config over ssh; slurm: the nodes of this Slurm allocation "
                        "(SLURM_JOB_NODELIST), reached by srun; auto (default): slurm inside an allocation when no "
                        "--ip_config is given, else ssh")
    p.add_argument("--num_server_threads", type=int, default=1, help="OMP threads per server")
    p.add_argument("--graph_format", type=_graph_format, default="csc",
                   help="DGL's structure formats of each partition (csr, csc, coo, comma-separated), accepted for "
                        "DGL's command lines: distgraph always serves each partition's in-edges as CSC, which "
                        "neighbour sampling reads, so the value changes nothing")
    p.add_argument("--num_omp_threads", type=int, default=None,
                   help="OMP threads per trainer (default: CPUs / 2 / num_trainers)")
    add_ssh_args(p)
    p.add_argument("--encrypt", action="store_true",
                   help="encrypt the job's traffic (ZeroMQ CURVE; costs throughput, see docs/benchmarks.md); by "
                        "default it is authenticated only")
    add_features_on_disk_arg(p)
    p.add_argument("--extra_envs", nargs="+", default=[], metavar="NAME=VALUE",
                   help="extra environment variables for every process")
    p.add_argument("--master_port", type=int, default=None,
                   help="torch.distributed port on machine 0 (default: a free port when it is this host, else 29500)")
    p.add_argument("user_command", nargs=argparse.REMAINDER, metavar="command",
                   help='the training command, e.g. "python3 train.py"')
    p.set_defaults(func=run)


def add_features_on_disk_arg(p: argparse.ArgumentParser) -> None:
    """`--features_on_disk`, of `distgraph launch` and `distgraph serve`."""
    p.add_argument("--features_on_disk", action="store_true",
                   help="serve the partitions' node and edge data (features, labels, masks) read-only from their "
                        "files through the page cache instead of copying them into shared memory: for features "
                        "larger than /dev/shm or RAM, at the cost of a page fault on first touch; writes to them "
                        "are refused (docs/runtime.md)")


def command_line(words: list[str]) -> str:
    """The shell command for the user's words: one word is a command line as DGL's launch.py
    takes it (`"python3 train.py --lr 0.1"`); several are an argv (`-- python3 train.py --a "b c"`),
    each word quoted so the script gets them as typed."""
    return words[0] if len(words) == 1 else shlex.join(words)


GRAPH_FORMATS = ("csr", "csc", "coo")


def _graph_format(text: str) -> str:
    """DGL launch.py's --graph_format value: formats among csr, csc, coo, comma-separated."""
    formats = [f.strip() for f in text.split(",")]
    if not all(f in GRAPH_FORMATS for f in formats):
        raise argparse.ArgumentTypeError(f"{text!r}: give formats among {', '.join(GRAPH_FORMATS)}, comma-separated")
    return ",".join(formats)


def run(args: argparse.Namespace) -> int:
    from ..launch.plan import LaunchOptions

    words = args.user_command[1:] if args.user_command[:1] == ["--"] else args.user_command
    extra_envs = list(args.extra_envs)
    while not words and extra_envs and "=" not in extra_envs[-1].split()[0]:
        words = [extra_envs.pop()]  # `--extra_envs A=1 "python3 train.py"`: argparse took the command too
    scheduler = args.scheduler
    if scheduler == "auto":
        from ..cluster.env import slurm_allocation

        scheduler = "slurm" if slurm_allocation() is not None and args.ip_config is None else "ssh"
    return launch(LaunchOptions(
        workspace=args.workspace, command=command_line(words), part_config=args.part_config, ip_config=args.ip_config,
        num_trainers=args.num_trainers, num_servers=args.num_servers, num_samplers=args.num_samplers,
        num_server_threads=args.num_server_threads, num_omp_threads=args.num_omp_threads, ssh=ssh_options(args),
        extra_envs=extra_envs, master_port=args.master_port, encrypt=args.encrypt, scheduler=scheduler,
        features_on_disk=args.features_on_disk))
