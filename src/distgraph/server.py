"""`python -m distgraph.server`: one server process, configured by the launcher's environment
(the same variables `distgraph launch` sets; see docs/launch.md)."""

from __future__ import annotations

import sys

from .cluster.env import ROLE, ProcessEnv
from .distributed.serve import serve
from .errors import DistGraphError


def main() -> int:
    """Serve until the session ends; exit code 2 with one message on a configuration error."""
    try:
        env = ProcessEnv.from_environ()
        if env is None or env.role != "server":
            raise DistGraphError(f"set {ROLE}=server and the other DISTGRAPH_* variables "
                                 f"(or start servers with `distgraph launch`)")
        serve(env.with_defaults(None, 1, 0, None))
    except DistGraphError as exc:
        print(f"distgraph.server: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
