"""`distgraph launch`: start servers and trainers on every machine of ip_config.

Names are imported on first use (`distgraph.lazy`), so `python -m distgraph.launch.agent`
runs the agent without the package importing it first (and without Python's warning that
it did)."""

from ..lazy import lazy_exports

_EXPORTS = {
    **{n: f"..cluster.ip_config:{n}" for n in ("DEFAULT_PORT", "MachineSpec", "parse_ip_config", "server_addresses")},
    **{n: f".plan:{n}" for n in ("LaunchOptions", "Plan", "ProcessSpec", "make_plan")},
    "run": ".runner:run", "SshOptions": ".ssh:SshOptions", "launch": ".runner:launch",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
