"""The user's own keys in an encrypted file under the data directory (``keys/keys.json``),
for machines without a keychain. Precedence ``user``, asked after the keychain
(``keys-keyring``); ``bay keys set`` writes here when no keychain is available (or
``BAY_KEYS_STORE=file``). See :mod:`browserbay_keys_file.store` for the format.
"""

from __future__ import annotations

from browserbay.hookspecs import hookimpl
from browserbay.keys import PASSPHRASE_VAR, key_environ
from browserbay.model import KeySource
from browserbay_keys_file.store import FileStore


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
