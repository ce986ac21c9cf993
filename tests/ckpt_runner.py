"""Run ckpt commands the way a user does, many times over, and measure each one.

`Runner` starts one worker process that imports ckpt once; for every command the worker
forks a child that runs the real CLI (`ckpt.cli.main`) with stdout and stderr on files,
under a memory cap and a time limit. `wait4` gives each child's own peak RSS. A run
costs a fork (a few ms) instead of an interpreter start, and a crash, a hang or a
memory bomb ends the child, never the test session.

    python tests/ckpt_runner.py     # the worker: JSON jobs on stdin, results on stdout
"""

from __future__ import annotations

import atexit
import importlib
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MEMORY_CAP = 1 << 30  # address space a child may map before allocations fail (1 GB)


@dataclass(frozen=True)
class Result:
    args: list[str]
    exit_code: int | None  # None: killed by a signal (see `signal`)
    signal: int | None
    stdout: bytes
    stderr: bytes
    seconds: float
    cpu_seconds: float  # the child's user + system time: what load on the machine leaves alone
    peak_mb: float  # the child's own peak resident set
    timed_out: bool


class Runner:
    """A worker process forking one child per command (see the module docstring)."""

    def __init__(self, src: Path | None = None, *, preload: Sequence[str] = ()) -> None:
        """`src`: the ckpt package's source folder to run (another checkout's, to compare
        before and after in a benchmark); this checkout's by default. `preload`: modules
        the worker imports too before it forks, e.g. a server's client library (psycopg:
        85 ms of each command on a Postgres store otherwise). Every child then holds them,
        and counts them in its peak memory: only for runs that import them anyway, or
        whose peak no test reads."""
        paths = [str(src or ROOT / "src"), str(ROOT)]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
        self._proc = subprocess.Popen(
            [sys.executable, __file__, *preload],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._in, self._out = self._proc.stdin, self._proc.stdout
        ready = self._out.readline()
        assert ready.strip() == "ready", ready
        # Output goes to files the test reads: the worker never holds it, so its memory (which
        # every forked child starts with, and counts in its peak) stays that of an import.
        self._dir = tempfile.TemporaryDirectory(prefix="ckpt-runner-")

    def run(
        self,
        args: list[str],
        *,
        cwd: str | None = None,
        env: dict[str, str | None] | None = None,
        timeout: float = 30.0,
    ) -> Result:
        """Run `ckpt ARGS` in a forked child; `env` sets variables (None unsets one)."""
        out, err = Path(self._dir.name) / "out", Path(self._dir.name) / "err"
        job = {"args": args, "cwd": cwd, "env": env or {}, "timeout": timeout}
        job |= {"out": str(out), "err": str(err)}
        self._in.write(json.dumps(job) + "\n")
        self._in.flush()
        line = self._out.readline()
        if not line:
            raise RuntimeError("the ckpt runner worker died")
        got = json.loads(line)
        return Result(
            args=args,
            exit_code=got["exit_code"],
            signal=got["signal"],
            stdout=out.read_bytes(),
            stderr=err.read_bytes(),
            seconds=got["seconds"],
            cpu_seconds=got["cpu_seconds"],
            peak_mb=got["peak_kb"] / 1024,
            timed_out=got["timed_out"],
        )

    def close(self) -> None:
        if self._proc.poll() is None:
            self._in.close()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._out.close()
        self._dir.cleanup()

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_SHARED: list[Runner] = []  # this test process's runner for run_ckpt, started on first use
# The client libraries of the server stores, imported once by run_ckpt's worker (the
# tests on Redis, MongoDB and the others run most of their commands through it).
SERVER_CLIENTS = ("psycopg", "redis", "pymongo", "pymysql")


def run_ckpt(*args: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    """`ckpt ARGS` as `subprocess.run([ckpt, *args], capture_output=True, text=True)` gives
    it, run by one Runner per test process (a fork instead of an interpreter start and
    ckpt's imports, ~0.3 s a run, more with a server client's threads to stop at exit).
    The child sees the environment the test process had when the runner started."""
    if not _SHARED:
        _SHARED.append(Runner(preload=SERVER_CLIENTS))
        atexit.register(_SHARED[0].close)
    done = _SHARED[0].run(list(args), timeout=timeout)
    if done.timed_out:
        raise subprocess.TimeoutExpired(["ckpt", *args], timeout)
    return subprocess.CompletedProcess(
        ["ckpt", *args],
        done.exit_code if done.exit_code is not None else -(done.signal or 1),
        done.stdout.decode("utf-8", "replace"),
        done.stderr.decode("utf-8", "replace"),
    )


# -- the worker ---------------------------------------------------------------------------------


def _child(job: dict[str, Any], out_fd: int, err_fd: int) -> None:
    """In the forked child: run one command and exit with its status."""
    try:
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))
        if job["cwd"]:
            os.chdir(job["cwd"])
        for key, value in job["env"].items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        sys.argv = ["ckpt", *job["args"]]
        sys.stdout = open(1, "w", encoding="utf-8", errors="strict", closefd=False)
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
        from ckpt.cli import main

        try:
            main()
            code = 0
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    except BaseException:  # anything the CLI let through: a traceback on stderr, exit 99
        import traceback

        try:
            traceback.print_exc()
            sys.stderr.flush()
        finally:
            os._exit(99)


def _serve() -> None:
    # What most commands import, imported once before the forks: every child inherits it
    # (a command's own lazy imports of Rich and the renderers cost ~30 ms a run).
    import rich.console
    import rich.table  # noqa: F401

    import ckpt.api
    import ckpt.cli
    import ckpt.records.encode
    import ckpt.records.types
    import ckpt.render.human
    import ckpt.render.output
    import ckpt.stores.sqlite  # noqa: F401

    for name in sys.argv[1:]:  # Runner(preload=...)
        importlib.import_module(name)
    print("ready", flush=True)
    for line in sys.stdin:
        job = json.loads(line)
        with open(job["out"], "wb") as out, open(job["err"], "wb") as err:
            started = time.monotonic()
            pid = os.fork()
            if pid == 0:
                _child(job, out.fileno(), err.fileno())
            deadline = started + job["timeout"]
            timed_out = False
            while True:
                done, status, usage = os.wait4(pid, os.WNOHANG)
                if done:
                    break
                if time.monotonic() > deadline:
                    timed_out = True
                    os.kill(pid, signal.SIGKILL)
                    done, status, usage = os.wait4(pid, 0)
                    break
                time.sleep(0.002)
            seconds = time.monotonic() - started
            result = {
                "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
                "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
                "seconds": seconds,
                "cpu_seconds": usage.ru_utime + usage.ru_stime,
                "peak_kb": usage.ru_maxrss,
                "timed_out": timed_out,
            }
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    _serve()
