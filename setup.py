"""Builds ckpt's one compiled module; everything else about the package is in pyproject.toml.

ckpt.stores._pickle_lean is Cython's compilation of src/ckpt/stores/pickle_lean.py, the
threads-only pass over `langgraph dev` pickle files, with the C types of pickle_lean.pxd
(`ckpt threads` on a 1.8 GB folder: 2.2 s as Python, under 1 s compiled). It is optional:
without Cython or a C compiler the build goes on without it, and ckpt runs pickle_lean.py
as plain Python (ckpt.stores.lean chooses). What is compiled is a copy of the source that
carries the source's digest, so a compiled module left over from older source is never used.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from setuptools import Extension, setup

SOURCE = Path("src/ckpt/stores/pickle_lean.py")
COPY = Path("build/cython/ckpt/stores/_pickle_lean.py")


def source_digest() -> str:
    """As ckpt.stores.lean.source_digest computes it: the .py, a NUL, the .pxd."""
    text = SOURCE.read_bytes() + b"\0" + SOURCE.with_suffix(".pxd").read_bytes()
    return hashlib.sha256(text).hexdigest()


def extensions() -> list[Extension]:
    try:
        from Cython.Build import cythonize
    except ImportError:
        return []
    COPY.parent.mkdir(parents=True, exist_ok=True)
    for package in (COPY.parent, COPY.parent.parent):  # Cython finds the .pxd in a package
        (package / "__init__.py").touch()
    COPY.write_text(SOURCE.read_text() + f'\n\nSOURCE_SHA256 = "{source_digest()}"\n')
    COPY.with_suffix(".pxd").write_text(SOURCE.with_suffix(".pxd").read_text())
    module = Extension("ckpt.stores._pickle_lean", [str(COPY)], optional=True)
    # Types come from the .pxd alone: an annotation such as `int` would mean a Python int.
    directives = {"language_level": 3, "annotation_typing": False}
    return cythonize([module], compiler_directives=directives, quiet=True)


setup(ext_modules=extensions())
