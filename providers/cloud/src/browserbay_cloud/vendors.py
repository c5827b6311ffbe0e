"""The hosted-browser vendors, as data: one row each, read from each vendor's public
documentation (API base URL, the read-only endpoint a key check uses, how the key is sent,
the vendor's own environment names, and the session contract: how a session is created,
where its CDP URL, id and live viewer are in the answer, how it is released). Not verified
against the live services from here: ``bay keys test cloud:<vendor>`` is that check, and a URL
field lets a user point a row at another region or a self-hosted instance. ``docs/cloud.md``
lists, per vendor, what was read where.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from browserbay.model import Exchange, IntegrationRow, KeyField

URL_PATTERN = r"https?://[^\s/?#]+(/[^\s?#]*)?"
KEY_PATTERN = r"[!-~]{8,}"  # printable, no spaces: the vendors publish no stricter shape
BOOL_PATTERN = r"true|false"

Method = Literal["GET", "POST", "PUT", "PATCH", "DELETE"]


@dataclass(frozen=True)
class Call:
    """One documented REST call: ``path`` may name ``{session_id}``; ``body`` is a JSON object
    of templates filled from the key's fields (``{"projectId": "{project_id}"}``): an entry
    whose field has no value is left out, ``true``/``false`` become JSON booleans, anything
    else is sent as written. None: no body."""

    method: Method
    path: str
    body: Mapping[str, str] | None = None


@dataclass(frozen=True)
class Contract:
    """How a vendor's session lives, as its documentation describes it."""

    docs: tuple[str, ...]
    """Where this contract was read (the vendor's own pages)."""
    create: Call | None
    """The call that creates a session. None: the CDP URL is the API URL itself (its scheme
    made ``ws``/``wss``) and connecting starts the browser."""
    cdp_field: str = ""
    """The field of the create answer holding the CDP URL (``ws(s)://``, or an ``http(s)://``
    discovery endpoint Playwright resolves through ``/json/version``)."""
    cdp_kind: Literal["ws", "http"] = "ws"
    """What the documented CDP URL is: a WebSocket URL, or an ``http(s)://`` discovery
    endpoint (``/json/version``). Playwright takes both; the fakes answer the documented one."""
    id_field: str = ""
    """The field of the create answer holding the session id (``{session_id}`` in paths)."""
    view_field: str | None = None
    """The field of the create answer holding the vendor's own live viewer URL."""
    view: Call | None = None
    """A second call that answers the viewer URL (when the create answer has none)."""
    view_answer_field: str | None = None
    """The field of ``view``'s answer holding the viewer URL."""
    release: Call | None = None
    """The call that ends the session. None: closing the CDP connection ends it."""
    connect_query: Mapping[str, str] = field(default_factory=dict)
    """Query parameters the vendor wants added to the CDP URL (templates: the key itself, for
    vendors that take it there). Such a URL is a secret: never logged, shown or stored."""


@dataclass(frozen=True)
class Vendor:
    name: str
    """The id's suffix: ``cloud:<name>``."""
    title: str
    api_url: str
    """The documented API base URL: the default of the row's URL field."""
    url_field: str
    key_env: str
    exchange_path: str
    headers: dict[str, str] = field(default_factory=dict)
    query: dict[str, str] = field(default_factory=dict)
    url_env: str | None = None
    key_pattern: str = KEY_PATTERN
    key_help: str = ""
    extra: tuple[KeyField, ...] = ()
    extra_env: dict[str, str] = field(default_factory=dict)
    contract: Contract = field(default_factory=lambda: Contract(docs=(), create=None))

    @property
    def id(self) -> str:
        return f"cloud:{self.name}"

    @property
    def has_viewer(self) -> bool:
        """The vendor documents a live-viewer URL per session (a ``provider-view`` target)."""
        return self.contract.view_field is not None or self.contract.view is not None

    def fields_from_env(self, env: Mapping[str, str]) -> dict[str, str]:
        """The key's fields back from the launch environment the keeper resolved for this
        provider (vendor variable name -> value): field name -> value."""
        names = self.row().vendor_env
        return {f: env[name] for f, name in names.items() if env.get(name)}

    def row(self) -> IntegrationRow:
        fields = (
            KeyField(
                "api_key",
                secret=True,
                pattern=self.key_pattern,
                help=self.key_help or f"a {self.title} API key (from its dashboard)",
            ),
            KeyField(
                self.url_field,
                secret=False,
                required=False,
                pattern=URL_PATTERN,
                default=self.api_url,
                help=f"the {self.title} API base URL (another region, or self-hosted)",
                url=True,
            ),
            *self.extra,
        )
        env = {"api_key": self.key_env, **self.extra_env}
        if self.url_env:
            env[self.url_field] = self.url_env
        return IntegrationRow(
            id=self.id,
            summary=f"{self.title} hosted browsers",
            fields=fields,
            vendor_env=env,
            test_kind="credential-exchange",
            exchange=Exchange(self.url_field, self.exchange_path, self.headers, self.query),
        )


def _stealth() -> KeyField:
    return KeyField(
        "stealth", secret=False, required=False, pattern=BOOL_PATTERN, help="true or false"
    )


VENDORS: tuple[Vendor, ...] = (
    Vendor(
        "browserbase",
        "Browserbase",
        "https://api.browserbase.com",
        "api_url",
        "BROWSERBASE_API_KEY",
        "/v1/projects",
        headers={"X-BB-API-Key": "{api_key}"},
        url_env="BROWSERBASE_BASE_URL",
        extra=(
            KeyField(
                "project_id",
                secret=False,
                required=False,
                pattern=r"[A-Za-z0-9_\-]{4,}",
                help="a Browserbase project id (optional)",
            ),
        ),
        extra_env={"project_id": "BROWSERBASE_PROJECT_ID"},
        contract=Contract(
            docs=(
                "https://docs.browserbase.com/reference/api/create-a-session",
                "https://docs.browserbase.com/reference/api/session-live-urls",
                "https://docs.browserbase.com/reference/api/update-session",
            ),
            create=Call("POST", "/v1/sessions", {"projectId": "{project_id}"}),
            cdp_field="connectUrl",
            id_field="id",
            view=Call("GET", "/v1/sessions/{session_id}/debug"),
            view_answer_field="debuggerFullscreenUrl",
            release=Call(
                "POST",
                "/v1/sessions/{session_id}",
                {"status": "REQUEST_RELEASE", "projectId": "{project_id}"},
            ),
        ),
    ),
    Vendor(
        "browserless",
        "Browserless",
        "https://production-sfo.browserless.io",
        "api_url",
        "BROWSERLESS_API_KEY",
        "/json/version",
        query={"token": "{api_key}"},
        url_env="BROWSERLESS_API_URL",
        extra=(_stealth(),),
        extra_env={"stealth": "BROWSERLESS_STEALTH"},
        contract=Contract(
            docs=(
                "https://docs.browserless.io/baas/connection-url-patterns",
                "https://docs.browserless.io/examples/playwright-connection",
            ),
            create=None,
            connect_query={"token": "{api_key}"},
        ),
    ),
    Vendor(
        "kernel",
        "Kernel",
        "https://api.onkernel.com",
        "endpoint",
        "KERNEL_API_KEY",
        "/browsers",
        headers={"Authorization": "Bearer {api_key}"},
        url_env="KERNEL_BASE_URL",
        extra=(_stealth(),),
        extra_env={"stealth": "KERNEL_STEALTH"},
        contract=Contract(
            docs=(
                "https://kernel.sh/docs/browsers/create-a-browser",
                "https://www.kernel.sh/docs/api-reference/browsers/update-browser-session",
                "https://www.kernel.sh/docs/api-reference/browsers/"
                "delete-a-browser-session-by-id-or-name",
            ),
            create=Call("POST", "/browsers", {"stealth": "{stealth}"}),
            cdp_field="cdp_ws_url",
            id_field="session_id",
            view_field="browser_live_view_url",
            release=Call("DELETE", "/browsers/{session_id}"),
        ),
    ),
    Vendor(
        "steel",
        "Steel",
        "https://api.steel.dev",
        "api_url",
        "STEEL_API_KEY",
        "/v1/sessions",
        headers={"steel-api-key": "{api_key}"},
        url_env="STEEL_BASE_URL",
        contract=Contract(
            docs=(
                "https://docs.steel.dev/overview/reference",
                "https://docs.steel.dev/integrations/playwright",
                "https://docs.steel.dev/overview/sessions-api/session-lifecycle",
            ),
            create=Call("POST", "/v1/sessions", {}),
            cdp_field="websocketUrl",
            id_field="id",
            view_field="sessionViewerUrl",
            release=Call("POST", "/v1/sessions/{session_id}/release"),
            connect_query={"apiKey": "{api_key}"},
        ),
    ),
    Vendor(
        "hyperbrowser",
        "Hyperbrowser",
        "https://api.hyperbrowser.ai",
        "api_url",
        "HYPERBROWSER_API_KEY",
        "/api/sessions",
        headers={"x-api-key": "{api_key}"},
        url_env="HYPERBROWSER_BASE_URL",
        contract=Contract(
            docs=(
                "https://hyperbrowser.ai/docs/sessions/lifecycle",
                "https://hyperbrowser.ai/docs/api-reference/stop-a-session",
                "https://hyperbrowser.ai/docs/openapi.json",
            ),
            create=Call("POST", "/api/session", {}),
            cdp_field="wsEndpoint",
            id_field="id",
            view_field="liveUrl",
            release=Call("PUT", "/api/session/{session_id}/stop"),
        ),
    ),
    Vendor(
        "browser-use",
        "Browser Use",
        "https://api.browser-use.com",
        "api_url",
        "BROWSER_USE_API_KEY",
        "/api/v3/billing/account",
        headers={"X-Browser-Use-API-Key": "{api_key}"},
        url_env="BROWSER_USE_BASE_URL",
        key_pattern=r"bu_[!-~]{8,}",
        key_help="a Browser Use API key, bu_…",
        contract=Contract(
            docs=(
                "https://docs.browser-use.com/cloud/browser/quickstart",
                "https://docs.browser-use.com/cloud/api-v3/browsers/create-browser-session",
                "https://docs.browser-use.com/cloud/api-v3/browsers/update-browser-session",
            ),
            create=Call("POST", "/api/v3/browsers", {}),
            cdp_field="cdpUrl",
            cdp_kind="http",
            id_field="id",
            view_field="liveUrl",
            release=Call("PATCH", "/api/v3/browsers/{session_id}", {"action": "stop"}),
        ),
    ),
)
