"""Run one piece of the preview in a forked child while the parent does the rest: the machines it runs on have
two cores, and the new-stack view (a second run of the program) is independent of the deployed one.

Forking is only safe while the process has a single thread (a thread holding a lock at the fork leaves it
locked forever in the child). The CLI forks right after its imports, before the first run starts the SDK's
worker threads; anywhere else (a test process that has already run the program) the work runs inline when its
result is asked for. Either way the caller gets the same result or the same exception type and message.
"""

from __future__ import annotations

import os
import pickle
import signal
import tempfile
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class ChildFailed(RuntimeError):
    """The forked work raised; the message is the child's exception, type first."""


class Background(Generic[T]):
    """`fn()` started now in a child process when that is safe, else run inline by `result()`."""

    def __init__(self, fn: Callable[[], T]) -> None:
        self._fn = fn
        self._pid: int | None = None
        self._path = ""
        if threading.active_count() == 1 and hasattr(os, "fork"):
            handle, self._path = tempfile.mkstemp(prefix="tpu-stack-preview-", suffix=".pickle")
            os.close(handle)
            pid = os.fork()
            if pid == 0:  # pragma: no cover - the child's own exit is its report
                self._run_child()
            self._pid = pid

    @property
    def forked(self) -> bool:
        return self._pid is not None

    def _run_child(self) -> None:
        try:
            outcome: tuple[str, object] = ("ok", self._fn())
        except BaseException as error:
            outcome = ("error", f"{type(error).__name__}: {error}")
        with open(self._path, "wb") as out:
            pickle.dump(outcome, out)
        os._exit(0)

    def result(self) -> T:
        if self._pid is None:
            return self._fn()
        _, status = os.waitpid(self._pid, 0)
        self._pid = None
        try:
            with open(self._path, "rb") as handle:
                kind, value = pickle.load(handle)
        except (OSError, EOFError, pickle.UnpicklingError):
            raise ChildFailed(f"the forked preview step ended without a result (wait status {status})") from None
        finally:
            os.unlink(self._path)
        if kind == "error":
            raise ChildFailed(str(value))
        result: T = value
        return result

    def cancel(self) -> None:
        """Stop the child (the parent failed first, e.g. on invalid config) and clean up."""
        if self._pid is None:
            return
        os.kill(self._pid, signal.SIGKILL)
        os.waitpid(self._pid, 0)
        self._pid = None
        if os.path.exists(self._path):
            os.unlink(self._path)
