"""`distgraph launch`: start servers and trainers on every machine of ip_config."""

from ..cluster.ip_config import DEFAULT_PORT, MachineSpec, parse_ip_config, server_addresses
from .plan import LaunchOptions, Plan, ProcessSpec, make_plan
from .runner import run
from .ssh import SshOptions


def launch(opts: LaunchOptions) -> int:
    """Plan and run a job; returns the exit code (that of the first failing process, or 0)."""
    plan = make_plan(opts)
    return run(plan, opts.ssh)


__all__ = ["launch", "LaunchOptions", "Plan", "ProcessSpec", "make_plan", "run", "SshOptions", "DEFAULT_PORT",
           "MachineSpec", "parse_ip_config", "server_addresses"]
