"""Store locations as messages show them."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["redact_url"]


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
