"""How the launcher reaches the other nodes of a Slurm allocation: `srun`, one job step of one
task per node, running the host's agent (`launch.agent`) as ssh would. The step's standard
input is the agent's lifeline (srun forwards it), its standard output the agent's events; a
step that ends (its task killed, the node lost, the job cancelled) is a lost host, as a
closed ssh session is."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class SrunOptions:
    """The allocation's node name of each address the plan uses."""

    nodes: dict[str, str] = field(default_factory=dict)
    name: str = "srun"

    def argv(self, host: str, remote_command: str) -> list[str]:
        """argv of an `srun` step that runs `remote_command` (a shell line) on the node of `host`."""
        return ["srun", "--nodes=1", "--ntasks=1", f"--nodelist={self.nodes.get(host, host)}", "--unbuffered",
                "--kill-on-bad-exit=0", "--job-name=distgraph-agent", "sh", "-c", remote_command]
