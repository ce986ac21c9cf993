"""A Redis connection for reading a RedisSaver store (or, through valkey-py, a ValkeySaver
one): only read commands, time-limited, its errors told in one line without passwords, and
what the server can do (modules, indexes)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from types import ModuleType
from typing import Any, Final, TypeVar

from ckpt.errors import MissingDependency, StoreUnreadable
from ckpt.records.types import ServerRecord, StorageRecord, storage_record
from ckpt.records.vocabulary import DEFAULT_TIMEOUT, install_hint
from ckpt.stores.base import close_quietly
from ckpt.stores.location import redact_url

# The only commands ckpt sends (tests/test_redis.py checks the server's command log
# against it): reads, and the two the connection itself needs.
READ_COMMANDS: Final = frozenset(
    {
        "PING",
        "MODULE",  # MODULE LIST
        "INFO",
        "DBSIZE",
        "SCAN",
        "TYPE",
        "GET",
        "MGET",
        "LRANGE",
        "LLEN",
        "PTTL",
        "MEMORY",  # MEMORY USAGE
        "ZRANGE",
        "ZCARD",
        "JSON.GET",
        "JSON.MGET",
        "JSON.DEBUG",  # JSON.DEBUG MEMORY
        "FT._LIST",
        "FT.SEARCH",
        "FT.INFO",
    }
)
SCAN_BATCH: Final = 2000
GET_BATCH: Final = 200
PIPE_BATCH: Final = 5000  # commands in one pipeline


def _import_redis() -> ModuleType:
    try:
        import redis
        import redis.backoff
        import redis.connection
        import redis.retry
    except ImportError:
        raise MissingDependency(
            f"reading a Redis store needs redis-py: {install_hint('redis')}"
        ) from None
    return redis


def _import_valkey() -> ModuleType:
    """valkey-py: redis-py's fork, the same modules under another name (ValkeySaver's own
    client; it reads valkey:// and valkeys:// URLs)."""
    try:
        import valkey
        import valkey.backoff
        import valkey.connection
        import valkey.retry
    except ImportError:
        raise MissingDependency(
            f"reading a Valkey store needs valkey-py: {install_hint('valkey')}"
        ) from None
    return valkey


class RedisSession:
    """One client. `modules` and `indexes` say what the server has (RedisJSON is needed;
    RediSearch indexes are used when the saver's are there)."""

    def __init__(self, spec: str, *, timeout: float | None = None, valkey: bool = False) -> None:
        self.redis = _import_valkey() if valkey else _import_redis()
        self.location = redact_url(spec)
        self.timeout = timeout if timeout is not None and timeout > 0 else DEFAULT_TIMEOUT
        NoBackoff = self.redis.backoff.NoBackoff
        Retry = self.redis.retry.Retry

        try:
            self.client = self.redis.Redis.from_url(
                spec,
                socket_timeout=self.timeout,
                socket_connect_timeout=self.timeout,
                retry=Retry(NoBackoff(), 0),
                retry_on_timeout=False,
                protocol=2,  # the replies this module parses, whatever the library's default
                **_no_client_info(self.redis),
            )
        except ValueError as exc:
            raise StoreUnreadable(f"{self.location}: not a valid Redis URL ({exc})") from None
        with self.errors("cannot connect"):
            self.client.execute_command("PING")
            modules = self.client.execute_command("MODULE", "LIST")
        self.modules = {_text(_module_name(m)).lower() for m in modules or ()}
        self.indexes: set[str] = set()
        if "search" in self.modules:
            with self.errors("cannot list the RediSearch indexes"):
                self.indexes = {_text(name) for name in self.execute("FT._LIST") or ()}

    def identity(self, prefix: str) -> str:
        """Which server, database and key prefix this is, whatever the URL spelled (its
        host resolved: `localhost` and `127.0.0.1` are one server)."""
        from ckpt.stores.location import resolved_host

        kwargs = self.client.connection_pool.connection_kwargs
        where = kwargs.get("path") or (
            f"{resolved_host(str(kwargs.get('host', 'localhost')))}:{kwargs.get('port', 6379)}"
        )
        return f"redis://{where}/{kwargs.get('db', 0)}/{prefix}"

    @property
    def has_json(self) -> bool:
        return "rejson" in self.modules or "redisjson" in self.modules

    def errors(self, doing: str = "cannot read") -> AbstractContextManager[None]:
        """Every redis-py error as one line (exit 4) that names no password."""
        return redis_errors(self.redis, self.location, self.timeout, doing)

    def execute(self, *args: Any) -> Any:
        assert str(args[0]).upper() in READ_COMMANDS, args[0]
        with self.errors():
            return self.client.execute_command(*args)

    def pipeline(self, commands: Sequence[Sequence[Any]]) -> list[Any]:
        """Several commands in one round trip; an error reply comes back in its place."""
        if not commands:
            return []
        with self.errors():
            pipe = self.client.pipeline(transaction=False)
            for command in commands:
                assert str(command[0]).upper() in READ_COMMANDS, command[0]
                pipe.execute_command(*command)
            return list(pipe.execute(raise_on_error=False))

    def scan(self, match: str) -> Iterator[bytes]:
        """Every key matching the glob `match`, a batch at a time (SCAN: never blocks the
        server the way KEYS does)."""
        cursor: Any = 0
        while True:
            cursor, keys = self.execute("SCAN", cursor, "MATCH", match, "COUNT", SCAN_BATCH)
            yield from keys
            if int(cursor) == 0:
                return

    def first_pages(self, index: str, queries: Sequence[str], page: int) -> list[list[Any] | None]:
        """The keys of the first `page` hits of each FT.SEARCH query, in one round trip;
        None for a query with more hits than that (or an error): page through it."""
        answers = self.pipeline(
            [
                ("FT.SEARCH", index, query, "NOCONTENT", "LIMIT", 0, page, "DIALECT", 2)
                for query in queries
            ]
        )
        return [
            answer[1:] if isinstance(answer, list) and answer and int(answer[0]) <= page else None
            for answer in answers
        ]

    def hits(self, index: str, queries: Sequence[str], page: int) -> list[list[bytes]]:
        """The keys of the first `page` hits of each FT.SEARCH query, in one round trip (an
        error reply raised, as `execute` raises it)."""
        found: list[list[bytes]] = []
        for answer in self.pipeline(
            [
                ("FT.SEARCH", index, query, "NOCONTENT", "LIMIT", 0, page, "DIALECT", 2)
                for query in queries
            ]
        ):
            if isinstance(answer, Exception):
                with self.errors():
                    raise answer
            listed = answer[1:] if isinstance(answer, list) else []
            found.append([key for key in listed if isinstance(key, bytes)])
        return found

    def memory(self, keys: Sequence[str]) -> list[int]:
        """JSON.DEBUG MEMORY of each key (0 where it is gone), PIPE_BATCH a round trip."""
        found: list[int] = []
        for start in range(0, len(keys), PIPE_BATCH):
            batch = keys[start : start + PIPE_BATCH]
            answers = self.pipeline([("JSON.DEBUG", "MEMORY", key) for key in batch])
            found.extend(a if isinstance(a, int) else 0 for a in answers)
        return found

    def measured_documents(self, keys: Sequence[str]) -> list[tuple[bytes | None, int]]:
        """The documents at `keys` as JSON text, each with its JSON.DEBUG MEMORY (None and
        0 where a key is gone): the JSON.MGETs and the memory asked in one pipeline, one
        round trip for up to PIPE_BATCH keys."""
        found: list[tuple[bytes | None, int]] = []
        for start in range(0, len(keys), PIPE_BATCH):
            batch = keys[start : start + PIPE_BATCH]
            texts, memory = self.documents_with(
                batch, [("JSON.DEBUG", "MEMORY", key) for key in batch]
            )
            found.extend(zip(texts, (a if isinstance(a, int) else 0 for a in memory), strict=True))
        return found

    def json_mget(self, keys: Sequence[bytes | str]) -> list[bytes | None]:
        """The documents at `keys` as JSON text (None where a key is gone), in one round trip
        (GET_BATCH keys a JSON.MGET)."""
        return self.documents_with(keys, ())[0]

    def documents_with(
        self, keys: Sequence[bytes | str], commands: Sequence[Sequence[Any]]
    ) -> tuple[list[bytes | None], list[Any]]:
        """The documents at `keys` as JSON text (None where a key is gone), and the answers
        to `commands` (an error reply in its place), in one round trip: each round trip is
        the reader's Python waking up, and a dump makes thousands."""
        gets = [
            ("JSON.MGET", *keys[start : start + GET_BATCH], ".")
            for start in range(0, len(keys), GET_BATCH)
        ]
        answers = self.pipeline([*gets, *commands])
        found: list[bytes | None] = []
        for texts in answers[: len(gets)]:
            if isinstance(texts, Exception):
                with self.errors():
                    raise texts
            found.extend(texts)
        return found, answers[len(gets) :]

    def close(self) -> None:
        close_quietly(self.client)


N = TypeVar("N")  # a key's name: a checkpoint's or a write's (keys.py)


def named_keys(
    session: RedisSession,
    keys: Iterable[bytes],
    parse: Callable[[str], N | None],
    paths: tuple[str, ...],
    from_fields: Callable[[Any], N | None],
) -> Iterator[tuple[str, N, bool]]:
    """Each key with its name, parsed from the key, else read from its document's fields
    (`paths`, 500 keys a round trip: a key whose name can split more than one way), and
    whether it was read."""
    unread: list[str] = []
    for raw in keys:
        key = raw.decode("utf-8", "surrogateescape")
        name = parse(key)
        if name is None:
            unread.append(key)
        else:
            yield key, name, False
    for start in range(0, len(unread), 500):
        batch = unread[start : start + 500]
        found = session.pipeline([("JSON.GET", key, *paths) for key in batch])
        for key, answer in zip(batch, found, strict=True):
            if (name := from_fields(answer)) is not None:
                yield key, name, True


def server_storage(
    session: RedisSession, families: Iterable[str], *, product: str, indexed: bool, note: str
) -> StorageRecord:
    """What the server holds: its memory, and every key by family (its first `:` segment:
    the saver's in `families`, `other` for any other, such as another application's keys
    in the same database, which ckpt lists but never reads). Redis and Valkey alike."""
    info = session.execute("INFO", "memory")
    used = int(info.get("used_memory", 0)) if isinstance(info, dict) else 0
    keys = int(session.execute("DBSIZE"))
    server = session.execute("INFO", "server")
    version = ""
    if isinstance(server, dict):
        version = str(server.get("valkey_version") or server.get("redis_version") or "")
    known = set(families)
    counted: dict[str, int] = {}
    for key in session.scan("*"):
        family = key.split(b":", 1)[0].decode("utf-8", "replace") if b":" in key else ""
        family = family if family in known else "other"
        counted[family] = counted.get(family, 0) + 1
    found: ServerRecord = {
        "product": product,
        "version": version,
        "keys": keys,
        "used_memory_bytes": used,
        "modules": sorted(session.modules),
        "indexed": indexed,
        "key_families": dict(sorted(counted.items())),
        "note": note,
    }
    return storage_record(used, server=found)


@contextmanager
def redis_errors(redis: ModuleType, location: str, timeout: float, doing: str) -> Iterator[None]:
    """Every redis-py (or valkey-py) error raised inside as one line (exit 4) that names no
    password: `doing` says what failed (reading the store, writing a copy)."""
    try:
        yield
    except redis.exceptions.AuthenticationError:
        raise StoreUnreadable(f"{location}: {doing}: wrong user name or password") from None
    except redis.exceptions.TimeoutError:
        raise StoreUnreadable(
            f"{location}: {doing}: no answer within {timeout:g} s (`timeout` sets the limit)"
        ) from None
    except redis.exceptions.ConnectionError as exc:
        raise StoreUnreadable(f"{location}: {doing}: {clean_error(exc)}") from None
    except _base_error(redis) as exc:
        raise StoreUnreadable(f"{location}: the server refused: {clean_error(exc)}") from None


def _base_error(redis: ModuleType) -> type[Exception]:
    """The library's base error: RedisError, or valkey-py's ValkeyError."""
    exceptions = redis.exceptions
    found: type[Exception] = getattr(exceptions, "RedisError", None) or exceptions.ValkeyError
    return found


def _no_client_info(redis: ModuleType) -> dict[str, Any]:
    """No CLIENT SETINFO on connect (ckpt sends only reads): `driver_info=None` from redis-py
    7.1 on, `lib_name=None` before it."""
    import inspect

    connection = redis.connection.AbstractConnection
    if "driver_info" in inspect.signature(connection.__init__).parameters:
        return {"driver_info": None}
    return {"lib_name": None, "lib_version": None}


def _module_name(module: Any) -> Any:
    if isinstance(module, dict):
        return module.get(b"name", module.get("name", b""))
    if isinstance(module, list | tuple):  # RESP2: [b"name", b"ReJSON", b"ver", ...]
        pairs = dict(zip(module[::2], module[1::2], strict=False))
        return pairs.get(b"name", pairs.get("name", b""))
    return module


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def clean_error(exc: BaseException) -> str:
    """An exception as one line of text."""
    return " ".join(str(exc).split()) or type(exc).__name__


def glob_escape(text: str) -> str:
    """`text` matched literally in a SCAN MATCH pattern."""
    return "".join("\\" + ch if ch in "*?[]\\^" else ch for ch in text)


def tag_escape(text: str) -> str:
    """`text` as one value of a RediSearch TAG query (`@field:{...}`)."""
    return "".join(ch if ch.isalnum() or ch == "_" else "\\" + ch for ch in text)


def thread_query(thread_id: str) -> str:
    """The RediSearch query for a thread's documents (its id as a TAG value)."""
    return "@thread_id:{" + tag_escape(thread_id or "00000000-0000-0000-0000-000000000000") + "}"
