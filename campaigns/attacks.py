"""The hostile-agent campaign's attack catalogue, as data: families × generated variants.

Nothing here runs an attack or judges one (that is :mod:`campaigns.hostile` and
:mod:`campaigns.oracles`): each function returns a list of :class:`Attack` rows, the same list
for the same seed. Values that only exist at run time (ports, the marker file, the victim's
ids) are ``{placeholders}`` the runner fills with :func:`fill`:

- ``{site}`` ``http://127.0.0.1:P`` (the allowed site), ``{port}`` its port;
- ``{out_port}`` the port of the "outside" server (127.0.0.1, 127.0.0.2 and ``[::1]``, reached
  by another name than the fence allows);
- ``{marker}`` the path of a file whose content must never reach a page;
- ``{devtools}`` the shared browser's own DevTools HTTP endpoint (cdp profiles);
- ``{aid}`` the attempt's id (every URL an attempt makes carries it: the access log attributes
  each hit to its attempt);
- ``{victim_target}``, ``{victim_context}`` the other session's targetId and browserContextId.

The generated families: **schemes** (URL forms for every road that navigates: ``bay open``,
``bay tab new``, a trigger ``open``, CDP ``Page.navigate`` / ``Target.createTarget``),
**cdp-methods** (the scoped endpoint's refused classes, browser-wide methods on a page
session, case variants, unknown methods, the other session's ids), **fence** (hosts the
domain fence must keep out × the ways a page gets there: redirect chains, meta refresh,
``window.open``, ``fetch``, script navigation, a link click), **key-exfil** (vendors × URL
forms of a listener). The fixed families (environ, planted socket, clipping and escapes,
floods, the context ceiling, triggers during a takeover) are small tables.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Attack:
    family: str
    name: str
    params: dict[str, Any] = field(default_factory=dict, hash=False, compare=True)

    def key(self) -> str:
        return f"{self.family}:{self.name}"


def fill(value: Any, values: dict[str, Any]) -> Any:
    """``value`` with its ``{placeholders}`` filled (recursively through lists and dicts); a
    string without any is returned unchanged (braces of JSON or JS are left alone)."""
    if isinstance(value, str):
        out = value
        for k, v in values.items():
            out = out.replace("{" + k + "}", str(v))
        return out
    if isinstance(value, list):
        return [fill(v, values) for v in value]
    if isinstance(value, dict):
        return {k: fill(v, values) for k, v in value.items()}
    return value


# -- URL forms -------------------------------------------------------------------------------

#: The dangerous places a navigation must never reach, by what reaching them would give.
TARGETS: dict[str, str] = {
    "chrome-version": "chrome://version/",
    "chrome-history": "chrome://history/",  # a shared profile's history: other sessions' URLs
    "chrome-crash": "chrome://inducebrowsercrashforrealz/",  # the shared browser goes down
    "chrome-kill": "chrome://kill/",
    "chrome-untrusted": "chrome-untrusted://terminal/",
    "file": "file://{marker}",
    "file-localhost": "file://localhost{marker}",
    "file-one-slash": "file:{marker}",
    "view-source-file": "view-source:file://{marker}",
    "view-source-chrome": "view-source:chrome://version/",
    "devtools": "devtools://devtools/bundled/inspector.html",
    "javascript-file": "javascript:location.href='file://{marker}'",
    "javascript-out": "javascript:fetch('http://localhost:{out_port}/t/{aid}/js')",
    "data-file": "data:text/html,<script>location.href='file://{marker}'</script>",
    "data-out": "data:text/html,<img src='http://localhost:{out_port}/t/{aid}/data'>",
    "blob": "blob:{site}/00000000-0000-0000-0000-000000000000",
    "filesystem": "filesystem:{site}/temporary/{aid}",
    "devtools-endpoint": "{devtools}/json/list",  # the browser's own endpoint lists every tab
    "devtools-endpoint-new": "{devtools}/json/new?about:blank",
}

#: How each form is written: one function of the canonical URL.
_ENCODINGS: dict[str, Callable[[str], str]] = {
    "as-is": lambda u: u,
    "upper-scheme": lambda u: _scheme_map(u, str.upper),
    "mixed-scheme": lambda u: _scheme_map(
        u, lambda s: "".join(c.upper() if i % 2 else c for i, c in enumerate(s))
    ),
    "leading-space": lambda u: " " + u,
    "leading-tab": lambda u: "\t" + u,
    "leading-newline": lambda u: "\n" + u,
    "trailing-space": lambda u: u + " ",
    "inner-tab": lambda u: _scheme_map(u, lambda s: s[:1] + "\t" + s[1:]),
    "inner-newline": lambda u: _scheme_map(u, lambda s: s[:1] + "\n" + s[1:]),
    "one-slash": lambda u: u.replace("://", ":/", 1),
    "no-slash": lambda u: u.replace("://", ":", 1),
    "backslashes": lambda u: u.replace("://", ":\\\\", 1),
    "percent-path": lambda u: _percent_path(u),
    "percent-scheme": lambda u: _scheme_map(u, lambda s: "%" + format(ord(s[0]), "02x") + s[1:]),
    "nul-prefix": lambda u: "\x00" + u,
}


def _scheme_map(url: str, fn: Callable[[str], str]) -> str:
    head, sep, rest = url.partition(":")
    if not sep or not head or any(c not in string.ascii_letters + "-+." for c in head):
        return url
    return fn(head) + ":" + rest


def _percent_path(url: str) -> str:
    """Percent-encode the letters of the part after the scheme's slashes (not the
    placeholders, which the runner fills)."""
    head, sep, rest = url.partition("://")
    if not sep:
        return url
    out, depth = [], 0
    for c in rest:
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        out.append(f"%{ord(c):02x}" if depth == 0 and c.isalpha() and c not in "{}" else c)
    return head + sep + "".join(out)


#: Every road by which a URL gets into a tab.
ROADS = ("open", "tab-new", "trigger-open", "cdp-navigate", "cdp-create-target", "cdp-set-document")


def scheme_variants() -> list[Attack]:
    out = []
    for target, url in TARGETS.items():
        for enc, fn in _ENCODINGS.items():
            written = fn(url)
            if written == url and enc != "as-is":
                continue  # the encoding does not apply to this URL
            for road in ROADS:
                out.append(
                    Attack(
                        "schemes",
                        f"{road}/{target}/{enc}",
                        {"road": road, "target": target, "url": written},
                    )
                )
    return out


# -- the domain fence ------------------------------------------------------------------------

#: Hosts that must stay outside a fence that allows only ``127.0.0.1``; every one reaches a
#: server of this campaign (the outside server listens on 127.0.0.1, 127.0.0.2 and ::1).
OUTSIDE_HOSTS: dict[str, str] = {
    "localhost": "localhost",
    "LOCALHOST": "LOCALHOST",
    "localhost-dot": "localhost.",
    "127.0.0.2": "127.0.0.2",
    "127.0.0.2-dot": "127.0.0.2.",
    "decimal-127.0.0.2": "2130706434",
    "hex-127.0.0.2": "0x7f000002",
    "hex-dotted-127.0.0.2": "0x7f.0.0.2",
    "octal-127.0.0.2": "0177.0.0.2",
    "short-127.0.2": "127.0.2",
    "ipv6-loopback": "[::1]",
    "ipv6-mapped-127.0.0.2": "[::ffff:127.0.0.2]",
    "userinfo-trick": "127.0.0.1@localhost",
    "userinfo-trick-2": "127.0.0.1:{port}@127.0.0.2",
    "idn-circled-localhost": "ⓛⓞⓒⓐⓛⓗⓞⓢⓣ",
    "idn-fullwidth-localhost": "ｌｏｃａｌｈｏｓｔ",
    "fullwidth-dots-127.0.0.2": "127。0。0。2",
    "percent-host": "%6c%6f%63%61%6c%68%6f%73%74",
    "suffix-of-allowed": "127.0.0.1.localhost",
}

#: How a page of the allowed site gets the browser to the outside host.
FENCE_MODES = (
    "open-direct",  # bay open straight to it (the keeper's first check)
    "redirect-301",
    "redirect-302",
    "redirect-303",
    "redirect-307",
    "redirect-308",
    "redirect-chain-3",  # 127.0.0.1 -> 127.0.0.1 -> 127.0.0.1 -> outside
    "meta-refresh",
    "script-location",
    "window-open",
    "fetch",
    "fetch-via-redirect",
    "img",
    "iframe",
    "link-click",
    "form-post",
    "tab-new-redirect",
    "trigger-open-redirect",
)


def fence_variants() -> list[Attack]:
    return [
        Attack("fence", f"{mode}/{host}", {"mode": mode, "host": spelled})
        for mode in FENCE_MODES
        for host, spelled in OUTSIDE_HOSTS.items()
    ]


# -- CDP methods on the scoped endpoint ------------------------------------------------------

#: (name, method, params, where) — where: "browser" (no sessionId), "page" (the attacker's own
#: page session), "victim" (a sessionId the attacker could only have from the other session).
_CDP_BASE: list[tuple[str, str, dict[str, Any], str]] = [
    (
        "tracing",
        "Tracing.start",
        {"transferMode": "ReportEvents", "traceConfig": {"includedCategories": ["*"]}},
        "browser",
    ),
    ("tracing-page", "Tracing.start", {"transferMode": "ReportEvents"}, "page"),
    ("crash", "Browser.crash", {}, "browser"),
    ("crash-page", "Browser.crash", {}, "page"),
    ("crash-gpu", "Browser.crashGpuProcess", {}, "browser"),
    ("close-browser", "Browser.close", {}, "browser"),
    ("close-browser-page", "Browser.close", {}, "page"),
    (
        "download-browser",
        "Browser.setDownloadBehavior",
        {"behavior": "allow", "downloadPath": "{dl_dir}", "eventsEnabled": True},
        "browser",
    ),
    (
        "download-browser-page",
        "Browser.setDownloadBehavior",
        {"behavior": "allow", "downloadPath": "{dl_dir}", "eventsEnabled": True},
        "page",
    ),
    (
        "download-page",
        "Page.setDownloadBehavior",
        {"behavior": "allow", "downloadPath": "{dl_dir}"},
        "page",
    ),
    ("file-input", "DOM.setFileInputFiles", {"files": ["{marker}"]}, "page"),
    ("navigate-crash", "Page.navigate", {"url": "chrome://inducebrowsercrashforrealz"}, "page"),
    ("navigate-file", "Page.navigate", {"url": "file://{marker}"}, "page"),
    ("navigate-devtools", "Page.navigate", {"url": "{devtools}/json/list"}, "page"),
    ("navigate-chrome-history", "Page.navigate", {"url": "chrome://history/"}, "page"),
    ("create-target-file", "Target.createTarget", {"url": "file://{marker}"}, "browser"),
    (
        "create-target-crash",
        "Target.createTarget",
        {"url": "chrome://inducebrowsercrashforrealz"},
        "browser",
    ),
    (
        "set-document-file",
        "Page.setDocumentContent",
        {"html": "<script>location.href='file://{marker}'</script>"},
        "page",
    ),
    (
        "attach-victim",
        "Target.attachToTarget",
        {"targetId": "{victim_target}", "flatten": True},
        "browser",
    ),
    (
        "attach-victim-page",
        "Target.attachToTarget",
        {"targetId": "{victim_target}", "flatten": True},
        "page",
    ),
    ("close-victim", "Target.closeTarget", {"targetId": "{victim_target}"}, "browser"),
    ("info-victim", "Target.getTargetInfo", {"targetId": "{victim_target}"}, "browser"),
    ("activate-victim", "Target.activateTarget", {"targetId": "{victim_target}"}, "browser"),
    ("expose-victim", "Target.exposeDevToolsProtocol", {"targetId": "{victim_target}"}, "browser"),
    ("attach-browser-target", "Target.attachToBrowserTarget", {}, "browser"),
    ("discover", "Target.setDiscoverTargets", {"discover": True}, "browser"),
    (
        "auto-attach",
        "Target.setAutoAttach",
        {"autoAttach": True, "waitForDebuggerOnStart": False, "flatten": True},
        "browser",
    ),
    ("get-targets", "Target.getTargets", {}, "browser"),
    ("get-targets-page", "Target.getTargets", {}, "page"),
    ("create-context", "Target.createBrowserContext", {}, "browser"),
    ("contexts", "Target.getBrowserContexts", {}, "browser"),
    (
        "dispose-victim-context",
        "Target.disposeBrowserContext",
        {"browserContextId": "{victim_context}"},
        "browser",
    ),
    (
        "storage-victim-cookies",
        "Storage.getCookies",
        {"browserContextId": "{victim_context}"},
        "browser",
    ),
    ("storage-cookies", "Storage.getCookies", {}, "browser"),
    ("storage-cookies-page", "Storage.getCookies", {}, "page"),
    ("network-all-cookies", "Network.getAllCookies", {}, "page"),
    ("network-cookies-victim-url", "Network.getCookies", {"urls": ["{site}/victim/"]}, "page"),
    (
        "storage-clear-victim",
        "Storage.clearDataForOrigin",
        {"origin": "{site}", "storageTypes": "all"},
        "page",
    ),
    ("system-info-process", "SystemInfo.getProcessInfo", {}, "browser"),
    ("histograms", "Browser.getHistograms", {}, "browser"),
    ("browser-cmdline", "Browser.getBrowserCommandLine", {}, "browser"),
    ("window-victim", "Browser.getWindowForTarget", {"targetId": "{victim_target}"}, "browser"),
    ("permissions", "Browser.grantPermissions", {"permissions": ["clipboardReadWrite"]}, "browser"),
    ("memory-dump", "Memory.getAllTimeSamplingProfile", {}, "page"),
    ("runtime-victim", "Runtime.evaluate", {"expression": "location.href"}, "victim"),
    ("navigate-victim", "Page.navigate", {"url": "{site}/t/{aid}/hijacked"}, "victim"),
    ("service-workers", "ServiceWorker.enable", {}, "page"),
    ("fetch-enable", "Fetch.enable", {"patterns": [{"urlPattern": "*"}]}, "browser"),
    ("io-read", "IO.read", {"handle": "1"}, "browser"),
]


def _case_variants(method: str) -> dict[str, str]:
    domain, _, name = method.partition(".")
    return {
        "": method,
        "lower": method.lower(),
        "upper": method.upper(),
        "domain-lower": domain.lower() + "." + name,
        "trailing-space": method + " ",
        "leading-dot": "." + method,
        "double-dot": domain + ".." + name,
        "nul": method + "\x00",
    }


def cdp_variants() -> list[Attack]:
    out = []
    for name, method, params, where in _CDP_BASE:
        for case, spelled in _case_variants(method).items():
            tag = f"{name}/{case}" if case else name
            out.append(
                Attack("cdp-methods", tag, {"method": spelled, "params": params, "where": where})
            )
    for n, made_up in enumerate(
        ("Browser.doesNotExist", "Nope.nope", "", "Target", "Tracing.startx", "Browser.crash.now")
    ):
        out.append(
            Attack(
                "cdp-methods", f"unknown-{n}", {"method": made_up, "params": {}, "where": "browser"}
            )
        )
    return out


# -- keys ------------------------------------------------------------------------------------

VENDORS = ("steel", "browserbase", "browserless", "kernel", "hyperbrowser", "browser-use")
LISTENER_URLS = {
    "127.0.0.1": "http://127.0.0.1:{listen_port}",
    "127.0.0.1-path": "http://127.0.0.1:{listen_port}/v1",
    "localhost": "http://localhost:{listen_port}",
    "localhost-dot": "http://localhost.:{listen_port}",
    "LOCALHOST": "http://LOCALHOST:{listen_port}",
    "decimal": "http://2130706433:{listen_port}",
    "hex": "http://0x7f.1:{listen_port}",
    "short": "http://127.1:{listen_port}",
    "ipv6": "http://[::1]:{listen_port}",
    "userinfo-vendor": "http://api.vendor.example@127.0.0.1:{listen_port}",
    "https-loopback": "https://127.0.0.1:{listen_port}",
}
#: When the attacker changes the URL: after the user stored the key (the attack), or in the
#: same command as the key (the one legitimate form: it gives the key again).
KEY_ROADS = ("keys-test", "keys-test-cli")


def key_variants() -> list[Attack]:
    return [
        Attack("key-exfil", f"{road}/{vendor}/{form}", {"vendor": vendor, "url": url, "road": road})
        for road in KEY_ROADS
        for vendor in VENDORS
        for form, url in LISTENER_URLS.items()
    ]


# -- the browser's own DevTools endpoint ----------------------------------------------------

#: The shared browser's DevTools HTTP endpoint, written several ways (``{devtools_port}``).
DEVTOOLS_URLS = {
    "json-list": "http://127.0.0.1:{devtools_port}/json/list",
    "json": "http://127.0.0.1:{devtools_port}/json",
    "json-version": "http://127.0.0.1:{devtools_port}/json/version",
    "upper-path": "http://127.0.0.1:{devtools_port}/JSON/LIST",
    "localhost": "http://localhost:{devtools_port}/json/list",
    "decimal": "http://2130706433:{devtools_port}/json/list",
    "short": "http://127.1:{devtools_port}/json/list",
    "query": "http://127.0.0.1:{devtools_port}/json/list?x=1",
}
#: Who goes there and how: the cdp session's own tab (``bay open``, ``tab new``, a page's
#: script, a meta refresh, CDP ``Page.navigate``) and another isolated session's tab.
DEVTOOLS_ROADS = (
    "open-cdp",
    "tab-new-cdp",
    "page-script-cdp",
    "meta-refresh-cdp",
    "cdp-navigate",
    "open-ephemeral",
)


def devtools_variants() -> list[Attack]:
    return [
        Attack("devtools-endpoint", f"{road}/{form}", {"road": road, "url": url})
        for road in DEVTOOLS_ROADS
        for form, url in DEVTOOLS_URLS.items()
    ]


# -- the fixed families ---------------------------------------------------------------------

ENVIRON_SECRETS = (
    "BAY_KEYS_PASSPHRASE",
    "BAY_INTEGRATION_CLOUD_STEEL_API_KEY",
    "BAY_INTEGRATION_CLOUD_BROWSER_USE_API_KEY",
    "BAY_INTEGRATION_CLOAK_LICENSE_KEY",
)


def environ_variants() -> list[Attack]:
    out = [
        Attack("environ", f"keeper/{name}", {"var": name, "where": "keeper"})
        for name in ENVIRON_SECRETS
    ]
    out.append(Attack("environ", "bay-chrome-devtools-port", {"where": "chrome"}))
    # The agent passes the opt-in itself: the flag is anybody's to pass.
    out.append(Attack("environ", "bay-chrome-allow-open-port", {"where": "chrome", "allow": True}))
    out.append(Attack("environ", "bay-run-argv", {"where": "run"}))
    return out


def socket_variants() -> list[Attack]:
    return [
        Attack(
            "planted-socket",
            f"{place}/{mode:o}/{'link' if link else 'dir'}",
            {"place": place, "mode": mode, "link": link},
        )
        for place in ("deep-home", "no-xdg-runtime")
        for mode in (0o777, 0o755, 0o700)
        for link in (False, True)
    ]


ESCAPES = {
    "csi-clear": "\x1b[2J\x1b[H",
    "osc52-clipboard": "\x1b]52;c;aGFja2Vk\x07",
    "bel": "\x07\x07",
    "c1-csi": "\x9b31m",
    "title-set": "\x1b]0;owned\x07",
}
ECHO_SIZES = (1_000, 20_000, 120_000, 1_000_000)


def clip_variants() -> list[Attack]:
    out = []
    for name in ESCAPES:
        for reader in ("get-text", "get-html", "get-title", "eval", "snapshot"):
            out.append(Attack("escapes", f"{reader}/{name}", {"reader": reader, "esc": name}))
    for size in ECHO_SIZES:
        for road in (
            "open-bad-scheme",
            "open-domain",
            "eval-throw",
            "fill-missing",
            "tab-bad-id",
            "cli-open-bad-scheme",
        ):
            out.append(Attack("clipping", f"{road}/{size}", {"road": road, "size": size}))
    return out


def flood_variants() -> list[Attack]:
    out = []
    for listener in ("unix", "liveview", "cdp"):
        for count in (100, 300, 1100):
            out.append(
                Attack(
                    "floods",
                    f"{listener}/idle/{count}",
                    {"listener": listener, "count": count, "partial": 0},
                )
            )
    for count, size in ((50, 1 << 20), (100, 4 << 20)):
        out.append(
            Attack(
                "floods",
                f"unix/partial/{count}x{size >> 20}MiB",
                {"listener": "unix", "count": count, "partial": size},
            )
        )
    for count in (100, 300):
        out.append(
            Attack(
                "floods",
                f"cdp/partial-frames/{count}",
                {"listener": "cdp", "count": count, "partial": 1 << 16},
            )
        )
    return out


def ceiling_variants() -> list[Attack]:
    return [
        Attack("ceiling", f"{n}-first-verbs/limit-{limit}", {"n": n, "limit": limit})
        for n, limit in ((12, 3), (16, 4))
    ]


def takeover_variants() -> list[Attack]:
    return [
        Attack("takeover", f"trigger-{action}", {"action": action})
        for action in ("open", "stop", "resume")
    ]


# -- the session boundary (issue 17) -------------------------------------------------------

#: The attacks the session socket closes, one row each: ``kind`` names the runner's step and
#: its oracle (campaigns/boundary.py), ``road`` how the agent tries (``cli``: the real ``bay``
#: with the agent's environment; ``frame``: a frame it wrote itself; ``op``: a control op).
#: On the owner's channel each is the owner's own power, so an oracle that fires there is
#: counted **cooperative** (documented), never a leak; a row whose ``owner`` is False has no
#: meaning there (a grant to revoke, a ttl to outlive) and runs on a session socket only.
BOUNDARY: tuple[tuple[str, dict[str, Any]], ...] = (
    # act for another session: its tab moved, or its page read
    ("other-session/open/flag", {"kind": "hijack", "road": "cli-flag"}),
    ("other-session/open/env", {"kind": "hijack", "road": "cli-env"}),
    ("other-session/open/frame", {"kind": "hijack", "road": "frame"}),
    ("other-session/open/frame-actor", {"kind": "hijack", "road": "frame-actor"}),
    ("other-session/open/frame-actor-owner", {"kind": "hijack", "road": "frame-actor-owner"}),
    ("other-session/read/flag", {"kind": "peek", "road": "cli-flag"}),
    ("other-session/read/env", {"kind": "peek", "road": "cli-env"}),
    ("other-session/read/frame", {"kind": "peek", "road": "frame"}),
    # read what is the owner's: every session, the audit, the log, every profile
    ("read/keeper-status/frame", {"kind": "census", "road": "frame", "verb": "keeper"}),
    ("read/keeper-status/cli", {"kind": "census", "road": "cli", "verb": "keeper"}),
    ("read/audit/frame", {"kind": "census", "road": "frame", "verb": "audit"}),
    ("read/audit/cli", {"kind": "census", "road": "cli", "verb": "audit"}),
    ("read/profiles/frame", {"kind": "census", "road": "frame", "verb": "profiles"}),
    ("read/keeper-logs/frame", {"kind": "logs", "road": "frame"}),
    ("read/keeper-logs/cli", {"kind": "logs", "road": "cli"}),
    # the owner's state: keys, profiles, groups, hints, trace
    ("keys/set/frame", {"kind": "keys", "road": "frame", "action": "set"}),
    ("keys/set/cli", {"kind": "keys", "road": "cli", "action": "set"}),
    ("keys/clear/frame", {"kind": "keys", "road": "frame", "action": "clear"}),
    ("keys/test/frame", {"kind": "keys", "road": "frame", "action": "test"}),
    ("forget/frame", {"kind": "forget", "road": "frame"}),
    ("forget/cli", {"kind": "forget", "road": "cli"}),
    ("adopt/frame", {"kind": "adopt", "road": "frame"}),
    ("group-default/frame", {"kind": "group", "road": "frame"}),
    ("group-default/cli", {"kind": "group", "road": "cli"}),
    ("hints-forget/frame", {"kind": "hints", "road": "frame"}),
    ("hints-forget/cli", {"kind": "hints", "road": "cli"}),
    ("trace-on/frame", {"kind": "trace", "road": "frame"}),
    ("trace-on/cli", {"kind": "trace", "road": "cli"}),
    # profiles: the owner's, without a grant; a child reaching its parent's
    ("owner-profile/use/frame", {"kind": "profile", "road": "use"}),
    ("owner-profile/open/frame", {"kind": "profile", "road": "frame-profile"}),
    ("owner-profile/open/cli", {"kind": "profile", "road": "cli-profile"}),
    ("child/parent-profile/use", {"kind": "child", "road": "use"}),
    ("child/parent-profile/open", {"kind": "child", "road": "frame-profile"}),
    ("child/other-session", {"kind": "child", "road": "hijack"}),
    # grants: made, revoked, outlived
    ("grant/self/frame", {"kind": "grant", "road": "frame"}),
    ("grant/self/cli", {"kind": "grant", "road": "cli"}),
    ("grant/revoke-other/frame", {"kind": "revoke-other", "road": "frame"}),
    ("revoked/held-connection", {"kind": "revoked", "road": "held", "owner": False}),
    ("revoked/new-connection", {"kind": "revoked", "road": "frame", "owner": False}),
    ("revoked/cli", {"kind": "revoked", "road": "cli", "owner": False}),
    ("expired/frame", {"kind": "expired", "road": "frame", "owner": False}),
    # the keeper's lifecycle (last: on the owner's channel they work)
    ("keeper-start/policy/cli-env", {"kind": "start", "road": "cli"}),
    ("keeper-start/policy/cli-set", {"kind": "start", "road": "cli-set"}),
    ("keeper-stop/frame", {"kind": "stop", "road": "frame"}),
    ("keeper-stop/frame-actor-owner", {"kind": "stop", "road": "frame-actor-owner"}),
    ("keeper-stop/op-shutdown", {"kind": "stop", "road": "op"}),
    ("keeper-stop/cli", {"kind": "stop", "road": "cli"}),
)


def boundary_variants() -> list[Attack]:
    return [Attack("boundary", name, {"owner": True, **params}) for name, params in BOUNDARY]


#: Attacks of the older families that are the owner's own decision on the owner's channel
#: (documented as cooperative there): the agent that passes ``--allow-open-port`` there is
#: the owner.
OWNER_COOPERATIVE = frozenset({"environ:bay-chrome-allow-open-port"})


def cooperative_on_owner(attack: Attack) -> bool:
    """An oracle that fires for this attack on the owner's channel is the owner's own power."""
    return attack.family == "boundary" or attack.key() in OWNER_COOPERATIVE


# -- the catalogue --------------------------------------------------------------------------

GENERATED = {
    "schemes": scheme_variants,
    "cdp-methods": cdp_variants,
    "fence": fence_variants,
    "key-exfil": key_variants,
}
FIXED = {
    "devtools-endpoint": devtools_variants,
    "environ": environ_variants,
    "planted-socket": socket_variants,
    "escapes": lambda: [a for a in clip_variants() if a.family == "escapes"],
    "clipping": lambda: [a for a in clip_variants() if a.family == "clipping"],
    "floods": flood_variants,
    "ceiling": ceiling_variants,
    "takeover": takeover_variants,
    "boundary": boundary_variants,
}
FAMILIES = tuple(GENERATED) + tuple(FIXED)


def catalogue(seed: int, sample: dict[str, int] | None = None) -> list[Attack]:
    """Every family's variants; a generated family is sampled down to ``sample[family]``
    with a generator seeded by ``seed`` and the family's name (the same seed, the same list,
    in the same order). A family missing from ``sample`` is kept whole."""
    sample = sample or {}
    out: list[Attack] = []
    for family in FAMILIES:
        rows = GENERATED[family]() if family in GENERATED else FIXED[family]()
        n = sample.get(family)
        if n is not None and n < len(rows):
            rng = random.Random(f"{seed}:{family}")
            rows = rng.sample(rows, n)
        out.extend(rows)
    return out


#: What a full run samples of each generated family (fits the 15-minute budget).
DEFAULT_SAMPLE = {"schemes": 200, "cdp-methods": 140, "fence": 120, "key-exfil": 30}
