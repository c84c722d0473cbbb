"""Says goodbye to the servers, waits until they are gone, then works on its own for a while
(as a script saving or evaluating after `exit_client()` does) and prints its argv."""

import json
import os
import socket
import sys
import time

import torch

import distgraph.distributed as dist
from distgraph.cluster.ip_config import parse_ip_config, server_addresses

torch.set_num_threads(1)
dist.initialize()
dist.barrier()
dist.exit_client()
peers = server_addresses(parse_ip_config(os.environ["DISTGRAPH_IP_CONFIG"]), 1)
deadline = time.monotonic() + 120
while time.monotonic() < deadline:
    try:
        for p in peers:
            socket.create_connection((p.host, p.port), timeout=1).close()
        time.sleep(0.1)
    except OSError:  # a server is gone: the distributed part is over
        break
else:
    sys.exit("the servers did not exit after every goodbye")
time.sleep(float(sys.argv[1]))
print("local work done", json.dumps(sys.argv[2:]), flush=True)
