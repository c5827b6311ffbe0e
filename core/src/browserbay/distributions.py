"""The distributions of this repository that do not come with ``bay`` itself (its providers
and plugins), what each adds, and how to install one: none is published on PyPI, so a hint
never says ``pip install browserbay-<x>``. It names the directory in the checkout this
installation runs from (``bay install /src/browserbay/plugins/mcp``), else the directory in
a browserbay checkout or a wheel built there.

Standard library only and cheap to import: ``bay help`` and the CLI's unknown-verb answer use
it (a test holds the table to the workspace's packages and the verbs their plugins add).
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Distribution:
    name: str
    """The distribution's name (``browserbay-mcp``)."""
    path: str
    """Its directory in a browserbay checkout (``plugins/mcp``)."""
    module: str
    """Its top-level module: importable when it is installed."""
    verbs: tuple[str, ...] = ()
    """The verbs that need it (its plugin's verbs; ``mcp`` for the MCP server)."""
    providers: tuple[str, ...] = ()
    """The provider ids it adds (``cloud`` for every ``cloud:<vendor>``)."""

    @property
    def installed(self) -> bool:
        return importlib.util.find_spec(self.module) is not None

    def install_command(self) -> str:
        """``bay install <its directory>``: in the checkout this installation runs from,
        else in a browserbay checkout (``<browserbay checkout>/plugins/mcp``)."""
        root = checkout()
        return f"bay install {os.path.join(root or '<browserbay checkout>', self.path)}"

    def install_hint(self) -> str:
        """The command that installs it here, as a way out says it (with where else it can
        come from when this installation is no checkout)."""
        if checkout() is not None:
            return self.install_command()
        return f"{self.install_command()}   ({NOT_PUBLISHED} --package {self.name})"


#: Said with a hint when this installation is no checkout.
NOT_PUBLISHED = "not on PyPI: from a checkout, or a wheel built there with uv build"

FIRST_PARTY: tuple[Distribution, ...] = (
    Distribution(
        "browserbay-chromium", "providers/chromium", "browserbay_chromium", providers=("chromium",)
    ),
    Distribution(
        "browserbay-cdp",
        "providers/cdp",
        "browserbay_cdp",
        verbs=("chrome", "cdp-url", "run"),
        providers=("cdp",),
    ),
    Distribution("browserbay-cloak", "providers/cloak", "browserbay_cloak", providers=("cloak",)),
    Distribution("browserbay-cloud", "providers/cloud", "browserbay_cloud", providers=("cloud",)),
    Distribution(
        "browserbay-local-window",
        "providers/local-window",
        "browserbay_local_window",
        verbs=("window",),
        providers=("local-window",),
    ),
    Distribution(
        "browserbay-liveview-web",
        "plugins/liveview-web",
        "browserbay_liveview_web",
        verbs=("live", "handoff"),
    ),
    Distribution("browserbay-trace", "plugins/trace", "browserbay_trace", verbs=("trace",)),
    Distribution("browserbay-mcp", "plugins/mcp", "browserbay_mcp", verbs=("mcp",)),
    Distribution("browserbay-keys-env", "plugins/keys-env", "browserbay_keys_env"),
    Distribution("browserbay-keys-file", "plugins/keys-file", "browserbay_keys_file"),
    Distribution("browserbay-keys-keyring", "plugins/keys-keyring", "browserbay_keys_keyring"),
)
BY_NAME = {d.name: d for d in FIRST_PARTY}


def checkout() -> str | None:
    """The browserbay checkout this installation runs from (an editable install, as
    ``scripts/setup.sh`` makes), else None (installed from wheels)."""
    here = os.path.abspath(__file__)  # <root>/core/src/browserbay/distributions.py
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(here))))
    marker = os.path.join(root, "core", "src", "browserbay", "distributions.py")
    return root if os.path.isfile(marker) else None


def providing_verb(verb: str) -> Distribution | None:
    """The first-party distribution a verb needs, if one does."""
    return next((d for d in FIRST_PARTY if verb in d.verbs), None)


def providing(provider_id: str) -> Distribution | None:
    """The first-party distribution that adds a provider (``cloud:steel``: browserbay-cloud)."""
    base = provider_id.split(":")[0]
    return next((d for d in FIRST_PARTY if base in d.providers), None)


def missing_verbs() -> list[Distribution]:
    """The distributions whose verbs are not installed here (none of them importable)."""
    return [d for d in FIRST_PARTY if d.verbs and not d.installed]


def provider_hint(provider_id: str) -> str:
    """How to install the plugin of a provider that is not installed (a way out)."""
    dist = providing(provider_id)
    if dist is None:  # a third party's: its own distribution, wherever it is published
        return "bay install <the distribution that provides it>   (then bay plugins)"
    return f"{dist.install_hint()}   (then bay plugins)"
