"""The ``local-window`` provider row (tier 3, no CDP) and the ``bay window`` verb."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NoReturn

from browserbay.hookspecs import hookimpl
from browserbay.model import (
    Capabilities,
    DoctorCheck,
    LaunchSpec,
    PluginVerb,
    ProviderRow,
    VerbContext,
)
from browserbay.refusals import Refusal
from browserbay.verbs import PLUGIN, Arg, Verb
from browserbay_local_window.doctor_checks import checks
from browserbay_local_window.names import ACTIONS, PROVIDER, launcher
from browserbay_local_window.settings import Settings

if TYPE_CHECKING:
    from browserbay_local_window.book import Windows

CAPABILITIES = Capabilities(
    has_cdp=False,
    owns_dir=False,
    ephemeral_contexts=False,
    screenshots=True,
    key_scope="none",
    lease_kind="window",
    headed=True,
    allowed_domains=False,
)


class NoPageDriver:
    """Page verbs never reach this provider: they need ``has_cdp``, which it lacks, and the
    keeper refuses them by that cell first. Windows are started by ``bay window``."""

    async def launch(self, playwright: object, spec: LaunchSpec) -> NoReturn:
        raise Refusal(
            "capability_missing",
            provider=PROVIDER,
            verb="launch a browser page",
            capability="has_cdp",
            way_out="bay window open -- <command>   (or bay window browser <url>)",
        )


def probe() -> str | None:
    settings = Settings.from_env()
    missing = [
        name
        for name, found in (
            (settings.xvfb, shutil.which(settings.xvfb)),
            ("dbus-daemon", shutil.which("dbus-daemon")),
            ("at-spi-bus-launcher", launcher()),
            (settings.python, shutil.which(settings.python)),
        )
        if not found
    ]
    if missing:
        return (
            f"missing {', '.join(missing)}; bash scripts/setup.sh "
            "(or apt-get install -y xvfb at-spi2-core dbus python3-pyatspi)"
        )
    return None


WINDOW_VERB = Verb(
    "window",
    PLUGIN,
    "Native windows (tier 3): open/browser/list/attach/detach/close, snapshot, click, type, "
    "key, screenshot, doctor.",
    (
        Arg("action", "pos", "what to do", choices=ACTIONS),
        Arg("handle", "opt", "a window handle (w1, d1…); for browser: the url to open"),
        Arg("target", "opt", "@eN for click and type; a key chord for key (ctrl+s, Return)"),
        Arg("text", "opt", "what type types (- reads it from stdin)"),
        Arg("at", "value", "click at X,Y in the window's own pixels (XTEST)"),
        Arg(
            "interactive", "flag", "snapshot: only nodes with actions or editable text", short="-i"
        ),
        Arg("max_nodes", "value", "snapshot: the node budget (default 4000)", type="int"),
        Arg("command", "tail", "open: the program and its arguments, after --"),
    ),
    mutates=True,
    secret_args=("text",),
    owner_only=("action=open",),  # runs a program of its choosing as the keeper's user
    example="bay window open -- /usr/bin/python3 app.py",
)


#: The actions that act on one window (their handle names the window's lease, so a human
#: driving that window pauses them: browser_paused, browser_interrupted).
ON_A_WINDOW = ("attach", "detach", "close", "snapshot", "click", "type", "key", "screenshot")


def window_target(args: Mapping[str, Any]) -> str | None:
    """The window a ``bay window`` call acts on (its lease), or None (open, list…)."""
    if args.get("action") in ON_A_WINDOW and args.get("handle"):
        return str(args["handle"])
    return None


class LocalWindowPlugin:
    """The plugin (the entry point names this class: one instance per load). Its book of
    displays and windows is made at the keeper's first ``bay window`` and lives as long as
    the keeper."""

    def __init__(self) -> None:
        self._book: Windows | None = None

    @hookimpl
    def bay_providers(self) -> list[ProviderRow]:
        return [
            ProviderRow(
                id=PROVIDER,
                tier=3,
                summary="Native windows on a display of our own: AT-SPI tree, actions, XTEST "
                "input, pixels (bay window …). No CDP.",
                capabilities=CAPABILITIES,
                driver_factory=NoPageDriver,
                probe=probe,
            )
        ]

    @hookimpl
    def bay_verbs(self) -> list[PluginVerb]:
        return [PluginVerb(WINDOW_VERB, self.handle, target=window_target, lease_free=True)]

    async def handle(self, ctx: VerbContext) -> tuple[dict[str, Any], str]:
        # Imported at first use: a keeper that never opens a window does not pay for Xlib.
        from browserbay_local_window import book, windows

        if self._book is None:
            self._book = book.Windows()
        return await windows.handle(self._book, ctx)

    @hookimpl
    def bay_doctor_checks(self) -> list[DoctorCheck]:
        """Display and AT-SPI rows for ``bay doctor`` (Xvfb is started for a moment)."""
        return checks()
