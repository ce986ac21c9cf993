"""The one small interface every store reader (SQLite, pickle folder, Postgres) implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from types import TracebackType
from typing import ClassVar

from ckpt.model import (
    Checkpoint,
    CheckpointKey,
    DumpQuery,
    RawBlob,
    RawCheckpoint,
    RawWrite,
    ThreadSummary,
)


class Store(ABC):
    """A read-only view of one checkpoint store.

    Readers never write, never run code from the data, and raise only `ckpt.errors`
    exceptions. Every method returns fully decoded records (see ckpt.model).
    """

    kind: ClassVar[str]  # "sqlite", "pickle", "postgres"
    location: str  # for messages; never holds a password
    aes_key: bytes | None
    notices: list[str]  # said once on stderr by the CLI (e.g. "this layout holds no values")

    def __init__(self, location: str, *, aes_key: bytes | None = None) -> None:
        self.location = location
        self.aes_key = aes_key
        self.notices = []
        self.refused: list[str] = []  # globals a pickle named, shown as refused values

    # -- listing ---------------------------------------------------------------------------
    @abstractmethod
    def threads(self) -> Iterator[ThreadSummary]:
        """Every thread, from aggregates plus its latest root checkpoint (no channel values)."""

    @abstractmethod
    def thread_exists(self, thread_id: str) -> bool: ...

    @abstractmethod
    def namespaces(self, thread_id: str) -> list[str]:
        """The thread's checkpoint namespaces, sorted ('' is the root)."""

    @abstractmethod
    def checkpoints(self, thread_id: str, *, values: bool = False) -> list[Checkpoint]:
        """All checkpoints of a thread in every namespace, with pending writes, oldest id first."""

    # -- finding ---------------------------------------------------------------------------
    @abstractmethod
    def find(self, fragment: str, *, thread_id: str | None = None) -> list[CheckpointKey]:
        """Keys whose checkpoint_id starts or ends with `fragment` (at most FIND_LIMIT).

        Tables print the last 8 characters of an id (its random part) as the short id,
        and users paste prefixes of full ids: both must resolve.
        """

    @abstractmethod
    def latest_key(self, thread_id: str, checkpoint_ns: str = "") -> CheckpointKey | None:
        """The newest checkpoint of a (thread, namespace), as LangGraph picks it (max id)."""

    # -- loading ---------------------------------------------------------------------------
    @abstractmethod
    def load(self, key: CheckpointKey, *, values: bool = True) -> Checkpoint:
        """One checkpoint with its pending writes; raises NotFound."""

    @abstractmethod
    def iter_checkpoints(self, query: DumpQuery, *, values: bool = True) -> Iterator[Checkpoint]:
        """Stream checkpoints (thread, ns, id order) with flat memory, one decoded at a time."""

    # -- raw scans (stats, types): stored bytes, nothing decoded, flat memory --------------
    @abstractmethod
    def raw_checkpoints(self, query: DumpQuery, *, data: bool = True) -> Iterator[RawCheckpoint]:
        """Every checkpoint row in (thread, ns, id) order; `data=False`: sizes only."""

    def raw_blobs(self, query: DumpQuery, *, data: bool = True) -> Iterator[RawBlob]:
        """Every stored channel value in (thread, ns, channel, version) order, for stores
        that keep values apart from the checkpoint (Postgres, the pickle folder)."""
        return iter(())

    @abstractmethod
    def raw_writes(self, query: DumpQuery, *, data: bool = True) -> Iterator[RawWrite]:
        """Every pending-write row in (thread, ns, checkpoint id, task, idx) order."""

    def encrypted_sample(self) -> tuple[str, bytes] | None:
        """One encrypted value of the store (tag, bytes), to check a key against; None when
        the store holds none or cannot find one cheaply."""
        return None

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections and file handles."""

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
