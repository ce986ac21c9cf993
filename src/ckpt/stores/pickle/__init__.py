"""`langgraph dev` stores (format.md §7): pickled PersistentDict files, read without running
them. store.py is the reader (PickleStore); layout.py the files it is made of and the
storage index; raw.py the stored values looked at without decoding; health.py its
Store.health; lean.py the threads-only pass over a file and passes.py its uses; index.py the
whole-dict pass with spans; unpickler.py the restricted unpickler that reads values, and
every file the passes turn away."""

from ckpt.stores.pickle.store import PickleStore

__all__ = ["PickleStore"]
