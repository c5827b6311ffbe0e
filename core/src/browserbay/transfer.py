"""Files in and out of the keeper through the connection, never by a path the keeper opens.
Standard library only: the thin client imports it.

An agent may run in a sandbox that shares no filesystem with the keeper (docs/sandboxing.md),
so a path a verb names is the caller's, and only the caller's client opens it. A verb marks
such an argument in its row (data, not code per verb): :data:`~browserbay.verbs.FILE_IN` (the
client reads the file and sends its bytes) or :data:`~browserbay.verbs.FILE_OUT` (the keeper
answers the bytes, the client writes the file). The wire (docs/protocol.md, "Files"):

- **In.** Before the verb, on the same connection, each file goes in ``put`` frames of at
  most :data:`CHUNK` bytes (base64): ``{"op": "put", "name", "size", "offset", "data"}``,
  then with the ``handle`` the first answer gave. The keeper stages it (0600, in its private
  runtime directory) and the verb's frame carries the handle in the path's place. Staged
  files are the connection's: gone once the next verb on it is answered, or it closes. One
  verb's files together weigh at most :data:`MAX_IN` (50 MiB, ``too_large`` past it: refused
  by the client before a byte is sent, and by the keeper).
- **Out.** The client makes a 0600 temporary file beside the destination *before* the verb is
  sent (a path it cannot write is refused ``file_unwritable`` before anything happens); the
  keeper's answer names ``data.file = {"handle", "name", "size"}``; the client fetches it in
  ``get`` frames (``{"op": "get", "handle", "offset"}`` -> ``{"data", "offset", "size",
  "eof"}``) and renames the temporary file onto the destination: an existing file there is
  replaced whole (like ``cp``), a symlink there is replaced, never written through, a
  directory there receives the file under the keeper's name for it (reduced to one path
  component). Nothing half-written is ever left at the destination.

:func:`carry` is the whole exchange as a generator (sans-IO): it yields the frames to send,
is sent each answer, and returns the verb's answer; the thin client, the sync and the async
Python clients drive it with their own sockets.
"""

from __future__ import annotations

import base64
import contextlib
import os
import stat

from browserbay.refusals import Refusal
from browserbay.verbs import FILE_IN, FILE_OUT

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Generator
    from typing import Any

    from browserbay.verbs import Verb

    Carry = Generator[dict[str, Any], dict[str, Any], dict[str, Any]]

#: Bytes of a file one frame carries (1 MiB of base64: the protocol's MAX_ARG).
CHUNK = 768 * 1024
#: The most bytes one verb's files weigh together (the keeper holds it too).
MAX_IN = 50 * 1024 * 1024
#: The most files one verb sends.
MAX_FILES = 32
#: The longest file name sent along (characters; the keeper shortens it further).
MAX_NAME = 255


def mib(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB"


class Reading:
    """One of the caller's files, opened for sending: a regular file (a FIFO or a device
    could be endless), read once, exactly as big as it was when opened."""

    __slots__ = ("fd", "name", "path", "size")

    def __init__(self, path: str):
        self.path = path
        try:
            self.fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            raise Refusal(
                "file_unreadable", path=path, reason=exc.strerror or type(exc).__name__
            ) from None
        st = os.fstat(self.fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(self.fd)
            raise Refusal("file_unreadable", path=path, reason="it is not a regular file")
        self.size = st.st_size
        self.name = os.path.basename(path)[:MAX_NAME] or "file"

    def chunks(self) -> Generator[bytes, None, None]:
        """The file's bytes, :data:`CHUNK` at a time (one empty chunk for an empty file)."""
        left = self.size
        while True:
            data = os.read(self.fd, min(CHUNK, left)) if left else b""
            if left and not data:
                raise Refusal(
                    "file_unreadable", path=self.path, reason="it shrank while being sent"
                )
            left -= len(data)
            yield data
            if not left:
                return

    def close(self) -> None:
        os.close(self.fd)


class Writing:
    """The caller's destination, with a 0600 temporary file made beside it at once (``O_EXCL``
    and ``O_NOFOLLOW``: nothing there is written through). :meth:`finish` renames it onto the
    destination; :meth:`abort` removes it."""

    __slots__ = ("dest", "fd", "into_dir", "temp")

    def __init__(self, dest: str):
        self.dest = dest
        try:
            self.into_dir = stat.S_ISDIR(os.lstat(dest).st_mode)
        except FileNotFoundError:
            self.into_dir = False
        except OSError as exc:
            raise Refusal("file_unwritable", path=dest, reason=exc.strerror or "") from None
        directory = dest if self.into_dir else os.path.dirname(dest)
        base = "download" if self.into_dir else os.path.basename(dest)
        self.temp = os.path.join(directory, f".{base[:64]}.{os.urandom(6).hex()}.part")
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            self.fd: int | None = os.open(self.temp, flags, 0o600)
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise Refusal("file_unwritable", path=dest, reason=f"{directory}: {reason}") from None

    def write(self, data: bytes) -> None:
        assert self.fd is not None
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]

    def finish(self, name: str) -> str:
        """The file in place: the destination, or ``<destination>/<name>`` for a directory
        (``name`` reduced to one path component). Answers the path written."""
        final = self.dest
        if self.into_dir:
            leaf = os.path.basename(name.replace("\\", "/")).strip(" .") or "download"
            final = os.path.join(self.dest, leaf)
        assert self.fd is not None
        os.close(self.fd)
        self.fd = None
        os.replace(self.temp, final)  # a symlink at `final` is replaced, never followed
        self.temp = ""
        return final

    def abort(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        if self.temp:
            with contextlib.suppress(OSError):
                os.unlink(self.temp)
            self.temp = ""


def _opened(verb: Verb, args: dict[str, Any]) -> list[tuple[str, int, Reading]]:
    """Every file the verb sends, opened: (argument, index in a list or -1, the file). A file
    that cannot be read, or files over :data:`MAX_IN` together, are refused before anything is
    sent."""
    opened: list[tuple[str, int, Reading]] = []
    try:
        for spec in verb.args:
            value = args.get(spec.name)
            if spec.type_for(args) != FILE_IN or value in (None, "", []):
                continue
            listed = isinstance(value, list)
            for n, path in enumerate(value if listed else [value]):
                opened.append((spec.name, n if listed else -1, Reading(str(path))))
        total = sum(r.size for _, _, r in opened)
        if len(opened) > MAX_FILES:
            raise Refusal(
                "too_large",
                what=f"{len(opened)} files",
                size=total,
                limit=MAX_IN,
                fix=f"send at most {MAX_FILES} files in one command",
            )
        if total > MAX_IN:
            what = "the file" if len(opened) == 1 else f"the {len(opened)} files together"
            raise Refusal(
                "too_large",
                what=f"{what} ({mib(total)})",
                size=total,
                limit=MAX_IN,
                fix=f"send at most {mib(MAX_IN)} in one command (split it, or compress it)",
            )
    except Refusal:
        for _, _, r in opened:
            r.close()
        raise
    return opened


def put_frame(
    frame_id: str,
    timeout: float,
    offset: int,
    data: bytes,
    handle: str | None,
    name: str,
    size: int,
) -> dict[str, Any]:
    """One ``put`` frame: ``data`` at ``offset`` of a file; the first (``handle`` None) names
    the file and its size, the next ones the handle the keeper answered."""
    frame: dict[str, Any] = {
        "id": frame_id,
        "op": "put",
        "timeout": timeout,
        "offset": offset,
        "data": base64.b64encode(data).decode("ascii"),
    }
    if handle is None:
        frame.update(name=name, size=size)
    else:
        frame["handle"] = handle
    return frame


def _put(reading: Reading, rid: str, timeout: float) -> Carry:
    """The ``put`` frames of one file; answers the keeper's last answer (a refusal stops it)."""
    handle: str | None = None
    offset = 0
    answer: dict[str, Any] = {}
    for n, data in enumerate(reading.chunks()):
        frame = put_frame(
            f"{rid}.put{n}", timeout, offset, data, handle, reading.name, reading.size
        )
        answer = yield frame
        if not answer.get("ok"):
            return answer
        handle = str(answer["data"]["handle"])
        offset += len(data)
    return answer


def get_frame(frame_id: str, timeout: float, handle: str, offset: int) -> dict[str, Any]:
    """One ``get`` frame: the offered file ``handle``'s bytes from ``offset`` on."""
    return {"id": frame_id, "op": "get", "timeout": timeout, "handle": handle, "offset": offset}


def _get(offer: dict[str, Any], writing: Writing, rid: str, timeout: float) -> Carry:
    """The ``get`` frames of one offered file, written as they come; answers the last
    answer (a refusal stops it)."""
    offset, size = 0, int(offer.get("size") or 0)
    n = 0
    while True:
        answer = yield get_frame(f"{rid}.get{n}", timeout, str(offer["handle"]), offset)
        if not answer.get("ok"):
            return answer
        data = base64.b64decode(answer["data"]["data"])
        offset += len(data)
        if offset > size:
            raise Refusal("bad_frame", reason="the keeper sent more bytes than it offered")
        try:
            writing.write(data)
        except OSError as exc:
            reason = f"{exc.strerror or exc} (the command ran; its file was not kept)"
            raise Refusal("file_unwritable", path=writing.dest, reason=reason) from None
        n += 1
        if answer["data"].get("eof"):
            return answer


def carry(verb: Verb, frame: dict[str, Any]) -> Carry:
    """The verb's whole exchange, its files included: yields each frame to send (``put``
    frames, the verb's own, ``get`` frames) and is sent each answer; returns the verb's
    answer, with ``data.path`` where its file was written (``data.file`` taken out). A file
    it cannot read or a destination it cannot write is raised as a :class:`Refusal` before
    any frame is yielded."""
    args: dict[str, Any] = dict(frame.get("args") or {})
    rid, timeout = str(frame.get("id")), float(frame.get("timeout") or 30.0)
    dest = next(
        (str(args[a.name]) for a in verb.args if a.type_for(args) == FILE_OUT and args.get(a.name)),
        None,
    )
    opened = _opened(verb, args)
    try:
        writing = Writing(dest) if dest is not None else None
    except Refusal:
        for _, _, r in opened:
            r.close()
        raise
    try:
        for name, n, reading in opened:
            answer = yield from _put(reading, rid, timeout)
            if not answer.get("ok"):
                return dict(answer, id=frame.get("id"))
            handle = answer["data"]["handle"]
            if n < 0:
                args[name] = handle
            else:
                args[name] = [*args[name][:n], handle, *args[name][n + 1 :]]
        answer = yield dict(frame, args=args)
        data = answer.get("data")
        offer = data.get("file") if isinstance(data, dict) else None
        if not answer.get("ok") or writing is None or not isinstance(offer, dict):
            return answer
        assert isinstance(data, dict)
        got = yield from _get(offer, writing, rid, timeout)
        if not got.get("ok"):
            return dict(got, id=frame.get("id"))
        try:
            final = writing.finish(str(offer.get("name") or "download"))
        except OSError as exc:
            reason = f"'{verb.name}' ran, but its file could not be put there: {exc.strerror}"
            raise Refusal("file_unwritable", path=dest, reason=reason) from None
        data = {k: v for k, v in data.items() if k != "file"}
        data["path"] = final
        text = str(answer.get("text") or "")
        if final != dest:
            text = text.replace(str(dest), final)
        return dict(answer, data=data, text=text)
    finally:
        for _, _, r in opened:
            r.close()
        if writing is not None:
            writing.abort()


class Step:
    """One step of :func:`carry`: the next ``frame`` to send, or (``done``) the answer."""

    __slots__ = ("done", "frame")

    def __init__(self, frame: dict[str, Any], done: bool):
        self.frame = frame
        self.done = done


def step(gen: Carry, answer: dict[str, Any] | None) -> Step:
    """Resume :func:`carry`'s generator with the last frame's ``answer`` (None: start it). A
    StopIteration never leaves (an event loop cannot carry one out of a worker thread)."""
    try:
        return Step(next(gen) if answer is None else gen.send(answer), False)
    except StopIteration as finished:
        return Step(finished.value, True)


def drive(gen: Carry, exchange: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
    """Run :func:`carry`'s generator with ``exchange(frame) -> answer`` (blocking)."""
    done = step(gen, None)
    while not done.done:
        done = step(gen, exchange(done.frame))
    return done.frame
