"""The hosted-browser vendors, as data: one row each, read from each vendor's public
documentation (API base URL, the read-only endpoint a key check uses, how the key is sent,
the vendor's own environment names). Not verified against the live services from here:
``bay keys test cloud:<vendor>`` is that check, and a URL field lets a user point a row at
another region or a self-hosted instance.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from browserbay.model import Exchange, IntegrationRow, KeyField

URL_PATTERN = r"https?://[^\s/?#]+(/[^\s?#]*)?"
KEY_PATTERN = r"[!-~]{8,}"  # printable, no spaces: the vendors publish no stricter shape
BOOL_PATTERN = r"true|false"


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

    @property
    def id(self) -> str:
        return f"cloud:{self.name}"

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
    ),
    Vendor(
        "kernel",
        "Kernel",
        "https://api.onkernel.com",
        "endpoint",
        "KERNEL_API_KEY",
        "/browsers",
        headers={"Authorization": "Bearer {api_key}"},
        extra=(_stealth(),),
        extra_env={"stealth": "KERNEL_STEALTH"},
    ),
    Vendor(
        "steel",
        "Steel",
        "https://api.steel.dev",
        "api_url",
        "STEEL_API_KEY",
        "/v1/sessions",
        headers={"steel-api-key": "{api_key}"},
    ),
    Vendor(
        "hyperbrowser",
        "Hyperbrowser",
        "https://api.hyperbrowser.ai",
        "api_url",
        "HYPERBROWSER_API_KEY",
        "/api/sessions",
        headers={"x-api-key": "{api_key}"},
    ),
    Vendor(
        "browser-use",
        "Browser Use",
        "https://api.browser-use.com",
        "api_url",
        "BROWSER_USE_API_KEY",
        "/api/v3/billing/account",
        headers={"X-Browser-Use-API-Key": "{api_key}"},
        key_pattern=r"bu_[!-~]{8,}",
        key_help="a Browser Use API key, bu_…",
    ),
)
