"""The provider table as ``bay plugins`` and ``bay backend`` show it: one row per provider,
built in one place. ``bay backend`` adds what a user choosing a backend needs: the rows by
tier (a tier is the provider row's, never a profile's), whether each can run here (and why
not), where its key would come from (the source, never the value) and its capability cells.

Blocking (a provider's probe looks at the disk, a key source may be a keychain round trip):
the keeper calls :func:`backend_listing` in a worker thread.
"""

from __future__ import annotations

from typing import Any

from browserbay.keys import SCOPES, KeyBook
from browserbay.model import ProviderRow
from browserbay.plugins import Plugins

#: Boolean cells shown by name in the text listing when they are true.
_SHOWN_CELLS = (
    "has_cdp",
    "owns_dir",
    "ephemeral_contexts",
    "screenshots",
    "headed",
    "allowed_domains",
    "remote_host",
    "cdp_endpoint",
)


def provider_row(p: ProviderRow) -> dict[str, Any]:
    """The row ``bay plugins`` lists: runnable, and the reason it is not (its
    ``not_runnable`` text, else its probe's answer)."""
    problem = p.not_runnable
    if problem is None and p.probe is not None:
        try:
            problem = p.probe()
        except Exception as exc:  # a probe that fails says so; it never fails the listing
            problem = f"its probe failed: {type(exc).__name__}"
    return {
        "id": p.id,
        "tier": p.tier,
        "summary": p.summary,
        "runnable": p.not_runnable is None and p.driver_factory is not None,
        "problem": problem,
        "capabilities": p.capabilities.as_row(),
    }


def key_source(p: ProviderRow, keys: KeyBook) -> dict[str, Any] | None:
    """Where the provider's key would come from now: ``user`` (which store), ``cluster``
    or ``none``, and the required fields nobody holds. Never a value, not even masked."""
    scope = p.capabilities.key_scope
    if scope == "none":
        return None
    row = keys.integrations.get(p.id)
    if row is None:
        return {
            "scope": scope,
            "integration": None,
            "source": "none",
            "store": None,
            "missing": [],
            "problems": [f"no installed plugin declares the integration {p.id!r}"],
        }
    res = keys.resolve(row.id, SCOPES.get(scope, ()))
    stores = sorted({o for o in res.origin.values() if o != "default"})
    return {
        "scope": scope,
        "integration": row.id,
        "source": res.source,
        "store": stores[0] if stores else None,
        "missing": list(res.missing),
        "problems": list(res.problems),
        "optional": not any(f.required for f in row.fields),
    }


def switch_partners(plugins: Plugins, provider_id: str) -> list[str]:
    """The providers a profile on ``provider_id`` can switch to and from: a pair can when
    either row names the other in ``can_switch_to`` (and both are installed)."""
    own = plugins.providers[provider_id].capabilities.can_switch_to
    return sorted(
        other.id
        for other in plugins.providers.values()
        if other.id != provider_id
        and (other.id in own or provider_id in other.capabilities.can_switch_to)
    )


def _key_words(key: dict[str, Any] | None) -> str:
    if key is None:
        return "no key needed"
    if key["source"] == "user":
        words = f"your own key ({key['store']})"
    elif key["source"] == "cluster":
        words = f"cluster default ({key['store']})"
    elif key.get("optional"):
        words = "no key set (optional)"
    else:
        words = "not configured"
    if key["missing"]:
        words += f", missing {', '.join(key['missing'])}"
    return words


def backend_listing(plugins: Plugins) -> dict[str, Any]:
    """Every provider, grouped by tier, with availability, key source and capabilities.
    ``available`` is false with a ``reason`` when the row cannot run here (declared but not
    runnable, its probe's finding) or its required key is not configured."""
    rows = []
    for p in plugins.providers.values():
        row = provider_row(p)
        row["switch_partners"] = switch_partners(plugins, p.id)
        key = key_source(p, plugins.keys)
        reason = row["problem"]
        if reason is None and key is not None and key["missing"]:
            field = key["missing"][0]
            reason = f"no key: bay keys set {key['integration'] or p.id} {field}"
        if reason is None and key is not None and key["problems"]:
            reason = "; ".join(key["problems"])
        rows.append(dict(row, available=row["runnable"] and reason is None, reason=reason, key=key))
    tiers = []
    for number in sorted({r["tier"] for r in rows} | set(plugins.tiers)):
        tier = plugins.tiers.get(number)
        tiers.append(
            {
                "tier": number,
                "name": tier.name if tier is not None else None,
                "summary": tier.summary if tier is not None else None,
                "providers": [r["id"] for r in rows if r["tier"] == number],
            }
        )
    return {"tiers": tiers, "providers": rows}


def listing_text(data: dict[str, Any], current: str | None) -> str:
    """The listing in words: one block per tier, one line per provider."""
    by_id = {r["id"]: r for r in data["providers"]}
    lines: list[str] = []
    for tier in data["tiers"]:
        head = f"tier {tier['tier']}"
        if tier["name"]:
            head += f" · {tier['name']} — {tier['summary']}"
        lines.append(head)
        if not tier["providers"]:
            lines.append("  (no provider installed)")
        for pid in tier["providers"]:
            r = by_id[pid]
            mark = "*" if pid == current else " "
            state = "available" if r["available"] else f"NOT available: {r['reason']}"
            caps = r["capabilities"]
            cells = [c for c in _SHOWN_CELLS if caps.get(c)]
            switch = ",".join(r["switch_partners"]) or "-"
            lines.append(f" {mark}{pid:<22} {state}")
            lines.append(
                f"    key: {_key_words(r['key'])} · lease {caps['lease_kind']} · "
                f"switch to/from: {switch} · {' '.join(cells) or '-'}"
            )
    return "\n".join(lines)
