"""Where a server bound to every address (``0.0.0.0``, ``::``) can really be reached.

``serve`` and ``proxy`` announce the URL they serve; for a wildcard bind the loopback URL
alone would hide that other machines reach it too (and under which address), so the
announcement adds :func:`also_reachable`: this machine's own addresses, found without any
name lookup (a lookup can hang on a broken resolver):

- on Linux, the IPv4 address of every interface (``socket.if_nameindex`` and the
  ``SIOCGIFADDR`` ioctl);
- everywhere, the address the machine would send from towards a documentation address
  (a UDP ``connect``, which sends nothing).

Loopback addresses are left out (the announced URL is the loopback one); what cannot be
found is left out, never guessed.
"""

from __future__ import annotations

import fcntl
import ipaddress
import socket
import struct
import sys
from urllib.parse import urlsplit, urlunsplit

WILDCARDS = ("0.0.0.0", "::", "[::]", "")
_SIOCGIFADDR = 0x8915  # Linux: an interface's IPv4 address
_PROBES = ((socket.AF_INET, "192.0.2.1"), (socket.AF_INET6, "2001:db8::1"))  # RFC 5737, 3849


def is_wildcard(host: str) -> bool:
    """Whether binding ``host`` listens on every address of the machine."""
    return host.strip() in WILDCARDS


def _interface_addresses() -> list[str]:
    if not sys.platform.startswith("linux"):
        return []

    found: list[str] = []
    try:
        names = [name for _, name in socket.if_nameindex()]
    except OSError:
        return []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        for name in names:
            try:
                packed = fcntl.ioctl(probe.fileno(), _SIOCGIFADDR,
                                     struct.pack("256s", name.encode()[:15]))
            except OSError:  # no IPv4 address on this interface
                continue
            found.append(socket.inet_ntoa(packed[20:24]))
    return found


def _route_addresses(families: tuple[int, ...]) -> list[str]:
    found: list[str] = []
    for family, target in _PROBES:
        if family not in families:
            continue
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as probe:
                probe.connect((target, 9))
                found.append(str(probe.getsockname()[0]))
        except OSError:  # no route (offline, no IPv6)
            continue
    return found


def machine_addresses(host: str) -> list[str]:
    """The non-loopback addresses a bind to ``host`` (a wildcard) answers on, IPv4 first."""
    families: tuple[int, ...] = (socket.AF_INET,)
    if host.strip("[]") == "::":
        families = (socket.AF_INET, socket.AF_INET6)  # dual stack, as Linux binds by default
    seen: dict[str, None] = {}
    for address in [*_interface_addresses(), *_route_addresses(families)]:
        try:
            parsed = ipaddress.ip_address(address.split("%")[0])
        except ValueError:
            continue
        if not (parsed.is_loopback or parsed.is_unspecified or parsed.is_link_local):
            seen.setdefault(str(parsed), None)
    return sorted(seen, key=lambda a: (":" in a, a))


def also_reachable(host: str, url: str) -> str:
    """What to add to the announced (loopback) ``url`` of a server bound to ``host``: "" for
    a specific address; for a wildcard, that it is bound there and its other URLs."""
    if not is_wildcard(host):
        return ""
    parts = urlsplit(url)
    urls = [urlunsplit(parts._replace(
        netloc=f"{f'[{a}]' if ':' in a else a}:{parts.port}")) for a in machine_addresses(host)]
    bound = host.strip() or "0.0.0.0"
    others = f", also at {', '.join(urls)}" if urls else ""
    return f"; bound to {bound} (every address of this machine){others}"
