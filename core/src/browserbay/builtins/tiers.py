"""The access-tier ladder and the built-in hints from failures.

A hint is worded as a hint, never a detection, and the core never escalates by itself.
"""

from __future__ import annotations

from browserbay.hookspecs import hookimpl
from browserbay.model import Failure, TierHint, TierRow


@hookimpl
def bay_access_tiers() -> list[TierRow]:
    return [
        TierRow(1, "cdp", "A browser driven over CDP: fast and exact (chromium, cdp)."),
        TierRow(
            2,
            "fingerprint-cdp",
            "A browser with its own consistent fingerprint, or a vendor's hosted one, over CDP.",
        ),
        TierRow(
            3,
            "computer-use",
            "A native window seen through accessibility and pixels: slow, imprecise, no CDP.",
        ),
    ]


_CHALLENGE_TITLES = ("just a moment", "attention required", "access denied", "are you a robot")


@hookimpl
def bay_tier_hint(failure: Failure) -> TierHint | None:
    title = (failure.title or "").strip().lower()
    blocked_status = failure.status in (403, 429)
    challenge = any(t in title for t in _CHALLENGE_TITLES)
    if not (blocked_status or challenge) or failure.tier >= 2:
        return None
    what = f"HTTP {failure.status}" if blocked_status else f"a page titled {failure.title!r}"
    return TierHint(
        f"The site answered with {what}. This may be bot protection; a tier-2 profile "
        "(a fingerprint browser or a hosted one) might fare better. Nothing was changed. "
        "If it keeps you out, say so for the user: bay blocked --url <url> --why <what you saw>",
        suggest_tier=2,
    )
