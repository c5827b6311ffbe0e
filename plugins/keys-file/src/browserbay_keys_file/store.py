"""An encrypted key file: every value sealed with AES-256-GCM, one fresh 96-bit nonce each,
its slot (``<integration>/<field>``) bound in as associated data.

The 256-bit key is either

- the contents of a key file (``keys.key``, 32 random bytes, mode 0600, refused when anyone
  else may read it), made on first use when no passphrase is set; or
- derived from ``BAY_KEYS_PASSPHRASE`` with scrypt, its salt and parameters stored in the
  data file, plus a check value so a wrong passphrase is named as such.

The key is derived once per process and kept in memory, so a get or set costs one small
file read (and, for a set, an atomic write): well under 20 ms, where an Argon2-per-entry
design costs ~350 ms (``bench/keys_file.py`` measures it).
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where a key is used: not at the keeper's start (~15 ms)
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

FORMAT = "browserbay-keys"
VERSION = 1
#: scrypt cost: 2**15 x 8 x 1 (32 MiB, tens of ms, paid once per process).
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**15, 8, 1
CHECK_SLOT = "\0check"
CHECK_PLAIN = b"browserbay-keys"

_derived: dict[tuple[bytes, int, int, int, str], bytes] = {}


class KeyFileError(RuntimeError):
    """The store cannot be used; the message says how to fix it and holds no value."""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text.encode("ascii"), validate=True)


def slot(integration_id: str, field: str) -> str:
    return f"{integration_id}/{field}"


class FileStore:
    """The data file ``<dir>/keys.json`` (and ``<dir>/keys.key`` without a passphrase)."""

    def __init__(self, directory: Path, passphrase: str | None = None):
        self.dir = directory
        self.data = directory / "keys.json"
        self.key_file = directory / "keys.key"
        self.lock_file = directory / "keys.lock"
        self.passphrase = passphrase or None

    # -- the key ------------------------------------------------------------------------------

    def _key(self, kdf: dict[str, Any]) -> bytes:
        if kdf.get("name") == "scrypt":
            if not self.passphrase:
                raise KeyFileError(
                    f"{self.data} is protected by a passphrase: set BAY_KEYS_PASSPHRASE where "
                    "the keeper starts (bay keeper stop; then run bay with it set)"
                )
            salt = _unb64(kdf["salt"])
            n, r, p = int(kdf["n"]), int(kdf["r"]), int(kdf["p"])
            cache = (salt, n, r, p, self.passphrase)
            if cache not in _derived:
                from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

                _derived[cache] = Scrypt(salt=salt, length=32, n=n, r=r, p=p).derive(
                    self.passphrase.encode("utf-8")
                )
            return _derived[cache]
        if kdf.get("name") == "file":
            return self._read_key_file()
        raise KeyFileError(f"{self.data} names an unknown key derivation; was it edited?")

    def _read_key_file(self) -> bytes:
        try:
            st = self.key_file.stat()
        except FileNotFoundError:
            raise KeyFileError(
                f"{self.key_file} is missing, so {self.data} cannot be opened; restore it, or "
                f"remove {self.data} to start over (its keys are then lost)"
            ) from None
        if st.st_uid != os.getuid() or stat.S_IMODE(st.st_mode) & 0o077:
            raise KeyFileError(
                f"{self.key_file} may be read by others: chmod 600 {self.key_file} "
                "(and make sure it is yours)"
            )
        key = self.key_file.read_bytes()
        if len(key) != 32:
            raise KeyFileError(f"{self.key_file} is not a 32-byte key; was it edited?")
        return key

    def _new_kdf(self) -> dict[str, Any]:
        if self.passphrase:
            salt = secrets.token_bytes(16)
            return {
                "name": "scrypt",
                "salt": _b64(salt),
                "n": SCRYPT_N,
                "r": SCRYPT_R,
                "p": SCRYPT_P,
            }
        fd = os.open(self.key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(secrets.token_bytes(32))
        return {"name": "file", "key_file": self.key_file.name}

    # -- the data file ------------------------------------------------------------------------

    def _load(self) -> dict[str, Any] | None:
        try:
            text = self.data.read_text()
        except FileNotFoundError:
            return None
        try:
            doc = json.loads(text)
        except ValueError:
            raise KeyFileError(f"{self.data} is not valid JSON; was it edited?") from None
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise KeyFileError(f"{self.data} is not a browserbay key file")
        if doc.get("version") != VERSION:
            raise KeyFileError(f"{self.data} has version {doc.get('version')}; upgrade browserbay")
        return doc

    def _open(self, doc: dict[str, Any]) -> AESGCM:
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        aead = AESGCM(self._key(doc["kdf"]))
        try:
            self._decrypt(aead, doc["check"], CHECK_SLOT)
        except InvalidTag:
            raise KeyFileError(
                f"the key does not open {self.data}: BAY_KEYS_PASSPHRASE differs from the one "
                "it was made with (or the key file was replaced)"
            ) from None
        return aead

    @staticmethod
    def _encrypt(aead: AESGCM, plain: bytes, name: str) -> dict[str, str]:
        nonce = secrets.token_bytes(12)
        return {"nonce": _b64(nonce), "ct": _b64(aead.encrypt(nonce, plain, name.encode()))}

    @staticmethod
    def _decrypt(aead: AESGCM, entry: dict[str, str], name: str) -> bytes:
        return aead.decrypt(_unb64(entry["nonce"]), _unb64(entry["ct"]), name.encode())

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.lock_file, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _write(self, doc: dict[str, Any]) -> None:
        tmp = self.data.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.data)

    # -- the source's three calls -------------------------------------------------------------

    def get(self, integration_id: str, field: str) -> str | None:
        from cryptography.exceptions import InvalidTag

        doc = self._load()
        if doc is None:
            return None
        entry = doc["entries"].get(slot(integration_id, field))
        if entry is None:
            return None
        aead = self._open(doc)
        try:
            return self._decrypt(aead, entry, slot(integration_id, field)).decode("utf-8")
        except InvalidTag:
            raise KeyFileError(
                f"the entry {slot(integration_id, field)} in {self.data} does not decrypt; "
                f"set it again: bay keys set {integration_id} {field}"
            ) from None

    def set(self, integration_id: str, field: str, value: str) -> None:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        with self._locked():
            doc = self._load()
            if doc is None:
                kdf = self._new_kdf()
                aead = AESGCM(self._key(kdf))
                check = self._encrypt(aead, CHECK_PLAIN, CHECK_SLOT)
                doc = {
                    "format": FORMAT,
                    "version": VERSION,
                    "kdf": kdf,
                    "check": check,
                    "entries": {},
                }
            else:
                aead = self._open(doc)
            name = slot(integration_id, field)
            doc["entries"][name] = self._encrypt(aead, value.encode("utf-8"), name)
            self._write(doc)

    def delete(self, integration_id: str, field: str) -> None:
        with self._locked():
            doc = self._load()
            if doc is None or doc["entries"].pop(slot(integration_id, field), None) is None:
                return
            self._write(doc)
