"""Store locations as messages show them."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["redact_url", "resolved_host"]


def redact_url(spec: str) -> str:
    """The store spec as messages show it: no password, in the URL or its query string."""
    if "://" not in spec:
        words = [w for w in spec.split() if not w.startswith("password=")]
        return " ".join(words)
    try:
        parts = urlsplit(spec)
        netloc = parts.netloc
        if "@" in netloc:
            userinfo, _, hostport = netloc.rpartition("@")
            netloc = f"{userinfo.split(':', 1)[0]}@{hostport}"
        query = urlencode([(k, v) for k, v in parse_qsl(parts.query) if k != "password"])
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    except ValueError:
        return spec.split("://", 1)[0] + "://…"


def resolved_host(host: str) -> str:
    """A server's host name as the address it resolves to (the first), for telling two
    spellings of one server apart from two servers; as given when it does not resolve."""
    import ipaddress
    import socket

    try:
        address = str(socket.getaddrinfo(host, None)[0][4][0])
        return "127.0.0.1" if ipaddress.ip_address(address).is_loopback else address
    except (OSError, UnicodeError, IndexError, ValueError):
        return host
