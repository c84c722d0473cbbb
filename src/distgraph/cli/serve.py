"""`distgraph serve`: start one machine's servers for trainers started by something else
(torchrun on every machine, say): the torchrun recipe in docs/launch.md."""

from __future__ import annotations

import argparse
import sys

from .launch import add_features_on_disk_arg


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "serve", help="start this machine's servers for trainers started elsewhere (torchrun)",
        description="Start the servers of machine MACHINE_ID of IP_CONFIG here, supervised like `distgraph launch`'s, "
                    "and wait until every trainer of the job has said goodbye. The job's secret comes from "
                    "DISTGRAPH_SECRET, which the trainers need too. See docs/launch.md (torchrun).")
    p.add_argument("--workspace", default=".", help="directory the servers run in (relative paths start there)")
    p.add_argument("--ip_config", required=True, help="one `IP [PORT [NUM_SERVERS]]` line per machine")
    p.add_argument("--part_config", required=True, help="partition config .json (in the workspace)")
    p.add_argument("--machine_id", type=int, required=True,
                   help="this machine's line of ip_config (0-based) = its partition = torchrun's --node_rank")
    p.add_argument("--num_servers", type=int, default=1, help="servers per machine (an ip_config column overrides)")
    p.add_argument("--num_trainers", type=int, default=1, help="trainers per machine (torchrun's --nproc_per_node)")
    p.add_argument("--num_server_threads", type=int, default=1, help="OMP threads per server")
    p.add_argument("--encrypt", action="store_true", help="encrypt the job's traffic (the trainers need "
                                                          "DISTGRAPH_ENCRYPT=1 too)")
    add_features_on_disk_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..launch.plan import LaunchOptions, make_plan
    from ..launch.runner import run as run_plan

    opts = LaunchOptions(workspace=args.workspace, command=sys.executable, part_config=args.part_config,
                         ip_config=args.ip_config, num_trainers=args.num_trainers, num_servers=args.num_servers,
                         num_server_threads=args.num_server_threads, encrypt=args.encrypt,
                         features_on_disk=args.features_on_disk)
    plan = make_plan(opts, serve=args.machine_id)
    print(f"[serve] machine {args.machine_id}: {len(plan.processes)} server(s), session {plan.session}",
          file=sys.stderr, flush=True)
    return run_plan(plan)
