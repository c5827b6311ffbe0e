"""Making a session socket's file (``browserbay.keeper.grants.bind_socket``) when whoever can
write its directory — the agent the socket is for, in its sandbox — races the keeper."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from browserbay.keeper import grants


def test_the_socket_is_0600_and_listening(tmp_path: Path) -> None:
    tmp_path.chmod(0o700)
    path = tmp_path / "bay.sock"
    made = grants.bind_socket(path)
    try:
        assert stat.S_IMODE(path.lstat().st_mode) == 0o600
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
            c.connect(str(path))
    finally:
        made.sock.close()


def test_a_symlink_swapped_in_after_the_bind_never_has_its_target_chmodded(
    tmp_path: Path,
) -> None:
    """The race the keeper must lose safely: between the bind and the mode change the path is
    replaced by a symlink to one of the owner's files. Setting the mode through the path
    (``os.chmod(path)``) follows the link and makes the owner's file 0600; it must be set on
    the bound socket's inode or not at all."""
    tmp_path.chmod(0o700)
    owners = tmp_path / "owners-file"
    owners.write_text("the owner's")
    owners.chmod(0o644)
    path = tmp_path / "bay.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(path))
        st = path.lstat()
        path.unlink()
        path.symlink_to(owners)  # the swap
        with pytest.raises(grants._Refused, match="changed while it was made"):
            grants._chmod_ours(path, (st.st_dev, st.st_ino))
    finally:
        sock.close()
    assert stat.S_IMODE(os.stat(owners).st_mode) == 0o644
