"""The writer: one thread that writes traces and prunes them, off the keeper's event loop.

The hook only appends to a queue (microseconds). The queue is bounded by the bytes of the
frames it holds (:data:`MAX_PENDING_BYTES`): past it an action is still recorded, its frames
dropped with the reason. Pruning runs after the first write and then at most once a minute.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from browserbay_trace.store import Retention, TraceStore, prune

log = logging.getLogger("browserbay.trace")

MAX_PENDING_BYTES = 32 * 1024 * 1024
PRUNE_EVERY = 60.0


@dataclass
class Job:
    key: str
    action_id: str
    record: dict[str, Any]
    frames: dict[str, bytes] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return sum(len(b) for b in self.frames.values())


class Writer:
    def __init__(self, root: Path, retention: Retention):
        self.store = TraceStore(root)
        self.retention = retention
        self._jobs: deque[Job] = deque()
        self._pending = 0
        self._cond = threading.Condition()
        self._closed = False
        self._busy = False
        self._pruned_at = 0.0
        self._thread: threading.Thread | None = None
        self.written = 0
        self.dropped_frames = 0

    def put(self, job: Job) -> None:
        """Queue an action (never blocks). Frames that would overflow the bound are dropped
        and the record says so."""
        with self._cond:
            if self._closed:
                return
            if job.frames and self._pending + job.size > MAX_PENDING_BYTES:
                self.dropped_frames += len(job.frames)
                missing = job.record.setdefault("missing", [])
                missing += [f"{w}: dropped, the trace writer is behind" for w in job.frames]
                for which in job.frames:
                    job.record[which] = None
                job.frames = {}
            self._jobs.append(job)
            self._pending += job.size
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="bay-trace", daemon=True)
                self._thread.start()
                atexit.register(self.close)
            self._cond.notify()

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until everything queued is on disk (tests, the report verb)."""
        end = time.monotonic() + timeout
        with self._cond:
            while self._jobs or self._busy:
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def close(self, timeout: float = 5.0) -> None:
        self.flush(timeout)
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._jobs and not self._closed:
                    self._cond.wait()
                if not self._jobs:
                    return
                job = self._jobs.popleft()
                self._busy = True
            try:
                self.store.save(job.key, job.action_id, job.record, job.frames)
                self.written += 1
            except Exception:
                log.exception("the trace of an action could not be written; carrying on")
            try:
                if time.monotonic() - self._pruned_at > PRUNE_EVERY or self._pruned_at == 0:
                    self._pruned_at = time.monotonic()
                    prune(self.store.root, self.retention)
            except Exception:
                log.exception("pruning the traces failed; carrying on")
            with self._cond:
                self._pending -= job.size
                self._busy = False
                self._cond.notify_all()
