"""Where a host name points, as far as it can be told without a lookup."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """Whether `host` is this machine only (localhost, 127.0.0.0/8, ::1): what reaches it crosses no network."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
