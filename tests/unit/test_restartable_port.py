"""A server stopped and started again on its port must find the port still free: the port comes
from below the kernel's ephemeral range, where no outgoing connection is given it meanwhile."""

from __future__ import annotations

import socket
from pathlib import Path

from recon.runtime.embedded import restartable_port


def test_the_port_is_below_the_ephemeral_range_and_free() -> None:
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    ports = {restartable_port() for _ in range(20)}
    assert all(10_000 <= p < low for p in ports), sorted(ports)
    for port in ports:
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))  # free: a server can take it by name
