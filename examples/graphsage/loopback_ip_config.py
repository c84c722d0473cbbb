"""Write an ip_config.txt for N machines on this host (127.0.0.1), each on a free port.

    python loopback_ip_config.py 2 ip_config.txt [--num_servers 1]
"""

from __future__ import annotations

import argparse

from distgraph.cluster.hosts import free_ports


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("machines", type=int)
    ap.add_argument("out")
    ap.add_argument("--num_servers", type=int, default=1)
    args = ap.parse_args()
    lines = [f"127.0.0.1 {p} {args.num_servers}" for p in free_ports("127.0.0.1", args.machines, args.num_servers)]
    with open(args.out, "w") as f:
        f.write("# machines on this host (written by loopback_ip_config.py)\n" + "\n".join(lines) + "\n")
    print(f"wrote {args.out}: " + ", ".join(lines))


if __name__ == "__main__":
    main()
