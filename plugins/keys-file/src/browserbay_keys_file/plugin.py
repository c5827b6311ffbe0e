"""The user's own keys in an encrypted file under the data directory (``keys/keys.json``),
for machines without a keychain. Precedence ``user``, asked after the keychain
(``keys-keyring``); ``bay keys set`` writes here when no keychain is available (or
``BAY_KEYS_STORE=file``). See :mod:`browserbay_keys_file.store` for the format.
"""

from __future__ import annotations

from browserbay.hookspecs import hookimpl
from browserbay.keys import PASSPHRASE_VAR, KeysOnSharedStorage, check_not_shared, key_environ
from browserbay.model import DoctorCheck, KeySource
from browserbay_keys_file.store import FileStore, KeyFileError


def store() -> FileStore:
    """The store of this home (``BAY_HOME`` or the XDG data dir), with the passphrase the
    keeper was started with, if any. Refused on storage every keeper of the fleet mounts
    (:func:`browserbay.keys.check_not_shared`)."""
    from browserbay.paths import bay_paths

    directory = bay_paths().data / "keys"
    check_not_shared(directory)  # another keeper of the fleet would read it there
    return FileStore(directory, key_environ().get(PASSPHRASE_VAR))


def get(integration_id: str, field: str) -> str | None:
    return store().get(integration_id, field)


def set_value(integration_id: str, field: str, value: str) -> None:
    store().set(integration_id, field, value)


def delete(integration_id: str, field: str) -> None:
    store().delete(integration_id, field)


#: What each way of keying the file protects, said plainly (``bay keys list``, ``bay doctor``).
BY_PASSPHRASE = (
    "passphrase (BAY_KEYS_PASSPHRASE, scrypt): a copy of keys.json, and a process of yours "  # noqa: S105
    "that lacks the passphrase (an agent's shell), cannot open it; the keeper holds the "
    "passphrase off its /proc environ"
)
BY_KEY_FILE = (
    "key file beside it (keys.key, 0600): protects a copied keys.json without its key file, "
    "and nothing against your own processes (an agent's shell can read both); for "
    "agent-proof use set BAY_KEYS_PASSPHRASE where the keeper starts (before the file exists)"
)


def uses_passphrase(s: FileStore) -> bool:
    """Whether the file is (or, not made yet, will be) keyed by a passphrase. Reads only
    the file's key-derivation name, never a value."""
    doc = s._load()
    if doc is None:
        return s.passphrase is not None
    return bool(doc.get("kdf", {}).get("name") == "scrypt")


def protection() -> str:
    return BY_PASSPHRASE if uses_passphrase(store()) else BY_KEY_FILE


@hookimpl
def bay_key_sources() -> list[KeySource]:
    return [
        KeySource(
            "file", "user", get, set=set_value, delete=delete, order=20, protection=protection
        )
    ]


@hookimpl
def bay_doctor_checks() -> list[DoctorCheck]:
    """The encrypted file store, the fallback where no keychain is: does it open? (Read
    only: its check entry is decrypted, no value is.)"""
    try:
        s = store()
    except KeysOnSharedStorage as exc:
        return [DoctorCheck("keychain", "file store", "fail", str(exc), "do what it says")]
    try:
        doc = s._load()
        if doc is None:
            detail = f"empty: bay keys set creates {s.data} (0600) when no keychain is reachable"
            return [DoctorCheck("keychain", "file store", "ok", detail)]
        s._open(doc)
    except KeyFileError as exc:
        return [DoctorCheck("keychain", "file store", "fail", str(exc), "do what it says")]
    count = len(doc.get("entries", {}))
    detail = f"{s.data}: opens, {count} value(s); protection: "
    if uses_passphrase(s):
        return [DoctorCheck("keychain", "file store", "ok", detail + "passphrase")]
    return [
        DoctorCheck(
            "keychain",
            "file store",
            "warn",
            detail + BY_KEY_FILE.split(";")[0],
            "for agent-proof keys: bay keys clear each integration, bay keeper stop, remove "
            f"{s.data} and {s.key_file}, start the keeper with BAY_KEYS_PASSPHRASE set, set "
            "the keys again",
        )
    ]
