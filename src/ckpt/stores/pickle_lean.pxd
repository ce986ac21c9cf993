# C types for pickle_lean.py, which Cython compiles as it is (pure Python mode: this file
# only declares). The compiled copy is ckpt.stores._pickle_lean (setup.py); the module runs
# the same code either way, with the opcode loop's positions, sizes and memo numbers as C
# integers instead of Python ints. Bounds and wraparound checks stay on (Cython's default):
# an index past the buffer raises IndexError, as in Python, and the pass reports Unsupported.

cimport cython


@cython.locals(low=Py_ssize_t, second=Py_ssize_t, third=Py_ssize_t, high=Py_ssize_t)
cdef Py_ssize_t _u32at(bytes buf, Py_ssize_t pos)


cdef class _Scan:
    cdef public object fd
    cdef public object storage
    cdef public object wanted
    cdef public object thread
    cdef public object whole
    cdef public object ids
    cdef public object check
    cdef public object globals
    cdef public object root
    cdef public object first_key
    cdef public object size

    @cython.locals(
        buf=bytes,
        base=Py_ssize_t,
        pos=Py_ssize_t,
        limit=Py_ssize_t,
        file_size=Py_ssize_t,
        count=Py_ssize_t,
        op=int,
        size=Py_ssize_t,
        index=Py_ssize_t,
        at=Py_ssize_t,
        start=Py_ssize_t,
        end=Py_ssize_t,
        stop=Py_ssize_t,
        check=bint,
        short=bint,
        payload=bint,
        stack=list,
        memo=list,
        marks=list,
    )
    cpdef object _run(self)
