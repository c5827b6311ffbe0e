"""The user's own keys in the OS keychain, through ``keyring``: the Secret Service on Linux
(gnome-keyring, KeePassXC…), the Keychain on macOS. Precedence ``user``, asked before the
encrypted file (``keys-file``).

Each value is one keychain item: service ``browserbay:<integration>``, user ``<field>``.
The backend is keyring's own choice (its configuration and ``PYTHON_KEYRING_BACKEND``
apply), except that a backend that cannot keep a secret (keyring's ``fail`` or ``null``
backends: no D-Bus session, no Secret Service) makes this source unavailable, so
``bay keys set`` uses the next store instead.
"""

from __future__ import annotations

import contextlib
from typing import Any

from browserbay.hookspecs import hookimpl
from browserbay.model import DoctorCheck, KeySource

SERVICE_PREFIX = "browserbay:"


def service(integration_id: str) -> str:
    return SERVICE_PREFIX + integration_id


def reset() -> None:
    """Make keyring choose its backend anew (tests that start a Secret Service): keyring
    remembers which backends are viable once per process, so that is forgotten too. A
    :class:`Keychain` made after this asks again."""
    import keyring.backend

    reset_viable = getattr(keyring.backend.get_all_keyring, "reset", None)
    if reset_viable is not None:
        with contextlib.suppress(KeyError):  # nothing remembered yet
            reset_viable()


def _failed(exc: Exception) -> RuntimeError:
    """A keychain error worded with the fix (never a value)."""
    kind = type(exc).__name__
    if "Locked" in kind or "locked" in str(exc).lower():
        return RuntimeError(
            "the keychain is locked: unlock it (log in to the desktop session, or "
            "gnome-keyring-daemon --unlock), then retry"
        )
    return RuntimeError(f"the keychain failed ({kind}); is its daemon running? bay keys list")


class Keychain:
    """The keychain as one load of the plugin sees it (the keeper's key source, or one ``bay
    doctor`` row): keyring's backend, chosen at the first use (a D-Bus probe: not on the hot
    path) and kept."""

    def __init__(self) -> None:
        self._backend: Any = None

    def backend(self) -> Any:
        if self._backend is None:
            import keyring.core

            keyring.core.init_backend()
            self._backend = keyring.core.get_keyring()
        return self._backend

    def probe(self) -> str | None:
        try:
            kr = self.backend()
        except Exception as exc:  # keyring's own detection failed (a bus that went away)
            return f"no usable keychain: keyring could not choose a backend ({type(exc).__name__})"
        name = f"{type(kr).__module__}.{type(kr).__name__}"
        if name.startswith(("keyring.backends.fail", "keyring.backends.null")):
            return (
                "no usable keychain (no Secret Service on a D-Bus session here); keys go to the "
                "encrypted file store instead"
            )
        if name.startswith("keyring.backends.chainer") and not getattr(kr, "backends", None):
            return "no usable keychain backend"
        return None

    def get(self, integration_id: str, field: str) -> str | None:
        try:
            value = self.backend().get_password(service(integration_id), field)
        except Exception as exc:
            raise _failed(exc) from None
        return value if isinstance(value, str) and value else None

    def set_value(self, integration_id: str, field: str, value: str) -> None:
        try:
            self.backend().set_password(service(integration_id), field, value)
        except Exception as exc:
            raise _failed(exc) from None

    def delete(self, integration_id: str, field: str) -> None:
        import keyring.errors

        try:
            self.backend().delete_password(service(integration_id), field)
        except keyring.errors.PasswordDeleteError:
            return
        except Exception as exc:
            raise _failed(exc) from None


@hookimpl
def bay_key_sources() -> list[KeySource]:
    """Called once per load: the source's calls share that load's :class:`Keychain`."""
    chain = Keychain()
    return [
        KeySource(
            "keyring",
            "user",
            chain.get,
            set=chain.set_value,
            delete=chain.delete,
            probe=chain.probe,
            order=10,
            protection=lambda: PROTECTION,
        )
    ]


PROTECTION = (
    "the OS keychain: encrypted at rest under your login; while it is unlocked any process "
    "of yours can ask it for a value (an agent's shell included)"
)


@hookimpl
def bay_doctor_checks() -> list[DoctorCheck]:
    """Is a keychain (the Secret Service on Linux) reachable for the user's own keys?"""
    chain = Keychain()
    reason = chain.probe()
    if reason is None:
        kr = chain.backend()
        name = f"{type(kr).__module__}.{type(kr).__name__}"
        return [DoctorCheck("keychain", "secret service", "ok", f"keyring backend {name}")]
    return [
        DoctorCheck(
            "keychain",
            "secret service",
            "warn",
            reason,
            "nothing, if the encrypted file store is fine (bay keys set uses it); for the "
            "keychain, run a Secret Service on your D-Bus session (gnome-keyring-daemon)",
        )
    ]
