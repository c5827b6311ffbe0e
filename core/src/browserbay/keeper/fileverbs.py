"""The file verbs: ``upload``, ``download`` (page verbs) and ``downloads`` (the session's kept
downloads). Their files move through the connection (:mod:`browserbay.keeper.files`): the
keeper never opens a path the caller names, so each works from a sandbox on a session socket.

- ``bay upload <target> <file>...``: the caller's files arrive staged (0600, named as the
  caller's files were); they are set on the file input with Playwright's ``set_input_files``.
  A target that is not ``<input type=file>`` (or several files on one without ``multiple``) is
  ``not_file_input``, and nothing is set.
- ``bay download <target> <path>``: claims the session's next download, clicks, waits for it
  (bounded by the deadline: none is ``download_not_started``), saves it staged within the
  session's bound (``download_quota``) and answers it; the caller's client writes it at the
  path. Nothing of it stays in the keeper.
- ``bay downloads [list | get <name> <path> | clear [name]]``: the downloads pages started by
  themselves, kept in the session's own directory (:mod:`browserbay.keeper.downloads`).
"""

from __future__ import annotations

import os
import shutil
import stat
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from browserbay import transfer
from browserbay.keeper.act import Act
from browserbay.keeper.downloads import Downloads, safe_name, size_text
from browserbay.keeper.outputs import regular_files
from browserbay.keeper.pageverbs import Answer, act_on, page_verb, pointer
from browserbay.keeper.route import SessionAnswer, SessionCall
from browserbay.refusals import Refusal

if TYPE_CHECKING:
    from playwright.async_api import Locator

#: What the target is, for upload: a file input (and whether it takes several files), or
#: how it reads (``<button>``).
FILE_INPUT_JS = """e => {
  const tag = e.tagName.toLowerCase();
  const type = tag === 'input' ? (e.getAttribute('type') || 'text').toLowerCase() : '';
  return {file: type === 'file', multiple: !!e.multiple,
          what: type ? `<input type=${type}>` : `<${tag}>`};
}"""


#: The most bytes of the files a session set on its pages that are kept for the browser to
#: read (the oldest go first past it: the page read or sent them long since).
UPLOADS_KEPT = 2 * transfer.MAX_IN


@page_verb("upload")
async def verb_upload(act: Act) -> Answer:
    target = str(act.args["target"])
    sent = [act.files.take(handle, "files") for handle in act.args["files"]]

    async def run(loc: Locator) -> None:
        kind = await loc.evaluate(FILE_INPUT_JS, timeout=act.ms_left())
        if not kind["file"]:
            raise Refusal("not_file_input", target=target, found=kind["what"])
        if len(sent) > 1 and not kind["multiple"]:
            found = f"an <input type=file> without multiple, which takes one file, not {len(sent)}"
            raise Refusal("not_file_input", target=target, found=found)
        # The browser reads a file from its path when the page reads or submits it: kept in
        # the session's uploads, beyond this connection.
        directory = act.files.uploads_of(act.lease.session.id)
        await anyio.to_thread.run_sync(_evict, directory, sum(f.size for f in sent))
        paths = [await act.files.settle(f, directory) for f in sent]
        try:
            await loc.set_input_files([str(p) for p in paths], timeout=act.ms_left())
        except BaseException:
            with anyio.CancelScope(shield=True):
                for p in paths:
                    await anyio.to_thread.run_sync(shutil.rmtree, p.parent, True)
            raise

    await act_on(act, target, run)
    files = [{"name": f.name, "size": f.size} for f in sent]
    text = "uploaded " + ", ".join(f"{f.name} ({size_text(f.size)})" for f in sent)
    return {"target": target, "files": files, "url": act.page.url}, text


#: The least time a download is given to start after the click (within the deadline).
MARGIN = 0.3


@page_verb("download")
async def verb_download(act: Act) -> Answer:
    downloads = _downloads(act.downloads)
    target = str(act.args["target"])
    sid = act.lease.session.id
    started = time.monotonic()
    with downloads.claiming(sid) as claim:
        await pointer(act, lambda loc, ready: loc.click(force=ready, timeout=act.ms_left()))
        with anyio.move_on_after(max(0.0, act.deadline - time.monotonic() - MARGIN)):
            await claim.arrived.wait()
    download = claim.download
    if download is None:
        waited = round(time.monotonic() - started, 1)
        raise Refusal("download_not_started", verb="download", target=target, waited=waited)
    dest = await act.files.staging(safe_name(download.suggested_filename))
    arrival = await downloads.receive(download, sid, dest)
    offer = act.files.offer_path(dest, arrival.name, arrival.size, remove=True)
    path = str(act.args["path"])
    data = {
        "file": offer.row(),
        "path": path,
        "name": arrival.name,
        "size": arrival.size,
        "url": act.page.url,
    }
    return data, f"downloaded {arrival.name} ({size_text(arrival.size)}) to {path}"


def _downloads(downloads: Downloads | None) -> Downloads:
    if downloads is None:  # a keeper built without downloads (none keeps them)
        raise Refusal(
            "capability_missing", provider="keeper", verb="download", capability="downloads"
        )
    return downloads


class DownloadVerbs:
    """``bay downloads``: the session's kept downloads, by name."""

    def __init__(self, downloads: Downloads | None) -> None:
        self.downloads = downloads

    async def downloads_verb(self, call: SessionCall) -> SessionAnswer:
        call.check()  # on the session, not a lease: only the hooks judge it
        downloads = _downloads(self.downloads)
        directory = downloads.directory(call.session.ref.id)
        action = str(call.args.get("action") or "list")
        name = call.args.get("name")
        if action == "get":
            if not name or not call.args.get("path"):
                raise Refusal("usage", detail="downloads get needs <name> <path>", verb="downloads")
            path, size = await anyio.to_thread.run_sync(_kept, directory, str(name))
            offer = call.files.offer_path(path, path.name, size, remove=False)
            dest = str(call.args["path"])
            data = {"file": offer.row(), "name": path.name, "size": size, "path": dest}
            return data, f"{path.name} ({size_text(size)}) to {dest}", None
        if action == "clear":
            gone = await anyio.to_thread.run_sync(_clear, directory, name)
            return {"cleared": gone}, f"cleared {len(gone)} download(s)", None
        files = await anyio.to_thread.run_sync(_listing, directory)
        used = sum(f["size"] for f in files)
        data = {"downloads": files, "bytes": used, "limit": downloads.max_bytes}
        lines = [f"{f['name']}\t{size_text(int(f['size']))}" for f in files]
        bound = f"{size_text(used)} of {size_text(downloads.max_bytes)} (BAY_DOWNLOAD_MAX_MB)"
        text = "\n".join([*lines, bound]) if lines else f"no downloads kept; {bound}"
        return data, text, None


def _evict(directory: Path, coming: int) -> None:
    """Make room for ``coming`` bytes among the session's kept uploads (:data:`UPLOADS_KEPT`):
    the oldest go first. Blocking."""
    try:
        with os.scandir(directory) as it:
            entries = sorted(it, key=lambda e: e.stat(follow_symlinks=False).st_mtime)
    except FileNotFoundError:
        return
    sizes = [
        (e.path, sum(s for _, s, _ in regular_files(Path(e.path))))
        for e in entries
        if e.is_dir(follow_symlinks=False)
    ]
    total = sum(s for _, s in sizes) + coming
    for path, size in sizes:
        if total <= UPLOADS_KEPT:
            return
        shutil.rmtree(path, ignore_errors=True)
        total -= size


def _listing(directory: Path) -> list[dict[str, Any]]:
    """The kept downloads, oldest first: name, size, when (a regular file each; a symlink or
    a directory there is no download)."""
    return [
        {"name": os.path.basename(p), "size": size, "at": round(mtime, 3)}
        for mtime, size, p in sorted(regular_files(directory))
        if not os.path.basename(p).startswith(".")  # one still arriving
    ]


def _kept(directory: Path, name: str) -> tuple[Path, int]:
    """The kept download called exactly ``name``: one path component, a regular file of the
    directory (never followed out of it); else ``download_unknown``."""
    if name != safe_name(name) or name in (".", ".."):
        raise Refusal("download_unknown", name=name)
    path = directory / name
    try:
        st = os.lstat(path)
    except OSError:
        raise Refusal("download_unknown", name=name) from None
    if not stat.S_ISREG(st.st_mode):
        raise Refusal("download_unknown", name=name)
    return path, st.st_size


def _clear(directory: Path, name: object) -> list[str]:
    """Remove one kept download (``name``) or every one; answers the names removed."""
    if name:
        path, _ = _kept(directory, str(name))
        path.unlink()
        return [path.name]
    gone = []
    for _, _, p in regular_files(directory):
        if os.path.basename(p).startswith("."):  # one still arriving: its own code removes it
            continue
        try:
            os.unlink(p)
        except FileNotFoundError:
            continue
        gone.append(os.path.basename(p))
    return sorted(gone)
