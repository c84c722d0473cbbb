"""`distgraph launch`: start servers and trainers on every machine of ip_config.

Names are imported on first use (`lazy`): a command that only parses its flags, or uses
`launch.ssh`, does not import the planner and runner.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from .plan import LaunchOptions

_EXPORTS = {"LaunchOptions": ".plan:LaunchOptions", "Plan": ".plan:Plan", "ProcessSpec": ".plan:ProcessSpec",
            "make_plan": ".plan:make_plan", "run": ".runner:run", "SshOptions": ".ssh:SshOptions",
            "DEFAULT_PORT": "..cluster.ip_config:DEFAULT_PORT", "MachineSpec": "..cluster.ip_config:MachineSpec",
            "parse_ip_config": "..cluster.ip_config:parse_ip_config",
            "server_addresses": "..cluster.ip_config:server_addresses"}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


def launch(opts: LaunchOptions) -> int:
    """Plan and run a job; returns the exit code (that of the first failing process, or 0)."""
    from .plan import make_plan
    from .runner import run

    plan = make_plan(opts)
    return run(plan, opts.ssh)


__all__ = sorted(["launch", *_EXPORTS])
