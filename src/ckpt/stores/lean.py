"""The threads-only pass over pickle files, compiled when it can be (see setup.py).

ckpt.stores._pickle_lean is Cython's compilation of pickle_lean.py; it is used only when it
was built from the very source beside it (a digest it carries), and unless CKPT_PURE_PYTHON
is set. Otherwise pickle_lean.py runs as Python: the same code, about 2.5x slower.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from ckpt.stores import pickle_lean

__all__ = ["PASS", "compiled", "materialize", "scan_kept", "scan_storage", "source_digest"]


def source_digest() -> str | None:
    """The digest setup.py gives the compiled copy: pickle_lean.py, a NUL, pickle_lean.pxd
    (None when the source cannot be read)."""
    source = Path(pickle_lean.__file__)
    try:
        text = source.read_bytes() + b"\0" + source.with_suffix(".pxd").read_bytes()
    except OSError:
        return None
    return hashlib.sha256(text).hexdigest()


def compiled() -> ModuleType | None:
    """The compiled pass, when it is built, current and wanted."""
    if os.environ.get("CKPT_PURE_PYTHON"):
        return None
    try:
        from ckpt.stores import _pickle_lean  # type: ignore[attr-defined]
    except ImportError:
        return None
    if getattr(_pickle_lean, "SOURCE_SHA256", None) != source_digest():
        return None  # built from other source: a checkout changed since it was built
    module: ModuleType = _pickle_lean
    return module


PASS: ModuleType = compiled() or pickle_lean

if TYPE_CHECKING:  # the compiled module has pickle_lean's names and signatures
    from ckpt.stores.pickle_lean import materialize, scan_kept, scan_storage
else:
    scan_storage = PASS.scan_storage
    scan_kept = PASS.scan_kept
    materialize = PASS.materialize
