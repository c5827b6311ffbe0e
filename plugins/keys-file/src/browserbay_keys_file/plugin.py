"""The user's own keys in an encrypted file under the data directory (``keys/keys.json``),
for machines without a keychain. Precedence ``user``, asked after the keychain
(``keys-keyring``); ``bay keys set`` writes here when no keychain is available (or
``BAY_KEYS_STORE=file``). See :mod:`browserbay_keys_file.store` for the format.
"""

from __future__ import annotations

from browserbay.hookspecs import hookimpl
from browserbay.keys import PASSPHRASE_VAR, key_environ
from browserbay.model import DoctorCheck, KeySource
from browserbay_keys_file.store import FileStore, KeyFileError


def store() -> FileStore:
    """The store of this home (``BAY_HOME`` or the XDG data dir), with the passphrase the
    keeper was started with, if any."""
    from browserbay.paths import bay_paths

    return FileStore(bay_paths().data / "keys", key_environ().get(PASSPHRASE_VAR))


def get(integration_id: str, field: str) -> str | None:
    return store().get(integration_id, field)


def set_value(integration_id: str, field: str, value: str) -> None:
    store().set(integration_id, field, value)


def delete(integration_id: str, field: str) -> None:
    store().delete(integration_id, field)


@hookimpl
def bay_key_sources() -> list[KeySource]:
    return [KeySource("file", "user", get, set=set_value, delete=delete, order=20)]


@hookimpl
def bay_doctor_checks() -> list[DoctorCheck]:
    """The encrypted file store, the fallback where no keychain is: does it open? (Read
    only: its check entry is decrypted, no value is.)"""
    s = store()
    try:
        doc = s._load()
        if doc is None:
            detail = f"empty: bay keys set creates {s.data} (0600) when no keychain is reachable"
            return [DoctorCheck("keychain", "file store", "ok", detail)]
        s._open(doc)
    except KeyFileError as exc:
        return [DoctorCheck("keychain", "file store", "fail", str(exc), "do what it says")]
    count = len(doc.get("entries", {}))
    return [DoctorCheck("keychain", "file store", "ok", f"{s.data}: opens, {count} value(s)")]
