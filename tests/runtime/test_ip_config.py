"""ip_config parsing: DGL and DGL-KE forms, comments, errors naming the line, and the warning
when a NUM_SERVERS column disagrees with --num_servers."""

import pytest

from distgraph.errors import InputError
from distgraph.cluster.ip_config import (DEFAULT_PORT, num_servers_disagreement, parse_ip_config_text,
                                        server_addresses)


def test_all_three_forms_comments_and_blank_lines():
    text = "# cluster\n\n10.0.0.1\n10.0.0.2 4000   # second\n  10.0.0.3 5000 3\nhost-a.example 6000\n"
    m = parse_ip_config_text(text, "ip.txt")
    assert [(x.ip, x.port, x.num_servers, x.line) for x in m] == [
        ("10.0.0.1", DEFAULT_PORT, None, 3), ("10.0.0.2", 4000, None, 4), ("10.0.0.3", 5000, 3, 5),
        ("host-a.example", 6000, None, 6)]
    peers = server_addresses(m, 2)
    assert [(p.machine_id, p.server_id, p.port) for p in peers] == [
        (0, 0, DEFAULT_PORT), (0, 1, DEFAULT_PORT + 1), (1, 0, 4000), (1, 1, 4001), (2, 0, 5000), (2, 1, 5001),
        (2, 2, 5002), (3, 0, 6000), (3, 1, 6001)]
    assert str(peers[2]) == "server 0 of machine 1 at 10.0.0.2:4000"


@pytest.mark.parametrize("text, message", [
    ("127.0.0.1 30050\n127.0.0.1 abc\n", "line 2: PORT must be an integer"),
    ("127.0.0.1 70000\n", "line 1: PORT"),
    ("127.0.0.1 30050 0\n", "line 1: NUM_SERVERS"),
    ("127.0.0.1 1 2 3\n", "line 1: expected `IP"),
    ("\n# only comments\n", "lists no machines"),
    ("bad_host! 30050\n", "line 1: 'bad_host!' is neither"),
    ("10.0.0.1:30050\n", r"line 1: '10.0.0.1:30050': separate the port from the address with a space \(10.0.0.1 30050\)"),
])
def test_errors_name_the_line(text, message):
    with pytest.raises(InputError, match=message):
        parse_ip_config_text(text, "ip.txt")


def test_machines_sharing_a_host_need_disjoint_ports():
    m = parse_ip_config_text("127.0.0.1 5000\n127.0.0.1 5001\n", "ip.txt")
    server_addresses(m, 1)
    with pytest.raises(InputError, match="line 2: machine 1 needs port 5001 on 127.0.0.1, already used by machine 0"):
        server_addresses(m, 2, "ip.txt")


def test_a_num_servers_column_that_disagrees_with_the_flag_is_named():
    m = parse_ip_config_text("10.0.0.1 5000 2\n10.0.0.2 5000\n10.0.0.3 5000 1\n10.0.0.4 5000 3\n", "ip.txt")
    assert num_servers_disagreement(m, 1, "ip.txt") == ("ip.txt gives 2 or 3 servers per machine on lines 1, 4, but "
                                                        "--num_servers is 1: the ip_config column wins there")
    assert num_servers_disagreement(m[1:3], 1) is None  # no column, or the same number
    assert "1 or 3 servers per machine on lines 3, 4," in num_servers_disagreement(m, 2)
