"""The one closed table of refusal codes. Standard library only: the thin client imports it.

Every refusal an agent can meet has a stable ``code`` from :data:`CODES`, a message that says
what happened, a ``way_out`` that says what to run next, and ``data`` for machines. Adding a
code means adding a row here, a test that produces it (the census in ``tests/`` fails
otherwise) and a line in ``docs/refusals.md``.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_DEADLINE = 124


class Code:
    """One row of the table: the message and way-out templates and the exit code."""

    __slots__ = ("exit", "message", "name", "way_out")

    def __init__(self, name: str, message: str, way_out: str, exit: int = EXIT_REFUSED):
        self.name = name
        self.message = message
        self.way_out = way_out
        self.exit = exit


_ROWS = (
    Code("usage", "{detail}", "bay help {verb}", EXIT_USAGE),
    Code(
        "backend_unavailable",
        "The {provider} provider cannot start a browser: {reason}",
        "{fix}",
    ),
    Code(
        "capability_missing",
        "The {provider} provider cannot do '{verb}': it lacks the capability {capability}",
        "bay plugins  (lists providers and their capability cells)",
    ),
    Code(
        "local_scheme_refused",
        "Navigation to a {scheme}: URL is refused; only http, https and about:blank are allowed",
        "serve the file over http (python3 -m http.server) and open http://127.0.0.1:PORT/...",
    ),
    Code("tab_gone", "Tab {tab} is gone: {reason}", "bay tab list"),
    Code(
        "browser_paused",
        "A human holds the controls of {of} ({by}, since {since}): your verbs on it are paused",
        "wait, then run it again (the first answer after the handback carries a notice: the "
        "current URL and what to re-run), or ask the human to press Hand back in the live view",
    ),
    Code(
        "browser_interrupted",
        "'{verb}' was cut: a human took the controls of {of} ({by}); {reached}",
        "wait for the handback, then run it again: {command}",
    ),
    Code(
        "browser_restarting",
        "The browser of profile {profile} is restarting on the {provider} backend (a backend "
        "switch): your verb did not run",
        "run it again in a moment: your tabs come back with the same ids at the same URLs "
        "(bay status shows when the switch is done)",
    ),
    Code(
        "backend_downgrade",
        "Profile {profile} cannot switch to {provider}: {why}",
        "{fix}",
    ),
    Code(
        "backend_version_unknown",
        "Profile {profile} cannot switch to {provider} safely: {why} ({evidence})",
        "if you know no newer Chromium wrote it: bay backend {provider} --confirm-version",
    ),
    Code(
        "no_proposal",
        "Profile {profile} has no backend switch proposed",
        "bay backend <provider> --profile {profile}   (switch or propose one)",
    ),
    Code(
        "own_proposal",
        "You proposed switching profile {profile} to {provider}: its owner accepts it, not "
        "its proposer",
        "wait for another holder of it or its user to run bay backend --accept --profile "
        "{profile}; bay backend --decline --profile {profile} withdraws it",
    ),
    Code(
        "not_your_tab",
        "Tab {tab} belongs to another session; a session acts only on its own tabs",
        "bay tab list  (your tabs), or bay tab new <url>",
    ),
    Code(
        "ref_stale",
        "Reference {ref} is not in this page's last snapshot (the page changed or navigated)",
        "bay snapshot -i  (then act on a fresh @eN)",
    ),
    Code(
        "target_not_found",
        "Nothing on the page matches {target}",
        "bay snapshot -i  (and use an @eN reference)",
    ),
    Code(
        "no_labels",
        "No interactive element of tab {tab} is in the picture to label ({count} in its snapshot)",
        "bay screenshot without --annotate, or with --full; or bay scroll down, then again",
    ),
    Code(
        "target_covered",
        "{target} is covered: {cover} is on top of it where a click presses, so the click "
        "would land on that instead",
        "close or move what covers it first (its close or accept button: bay snapshot -i; or "
        "bay press Escape), or scroll the target clear of it; then run it again",
    ),
    Code(
        "option_missing",
        "{target} has no option '{value}' (by value or label); its {count} option(s): {options}",
        "bay select {target} '{example}'  (a value or a label it has)",
    ),
    Code(
        "target_ambiguous",
        "{target} matches {count} elements ({matches}); acting on one of them would be a guess",
        "narrow it: --name N, --exact, or bay snapshot -i and act on its @eN",
    ),
    Code(
        "not_a_frame",
        "{target} is not an iframe (it is <{tag}>): there is no frame to act inside",
        "bay snapshot -i  (an iframe shows as: iframe @eN), then bay frame @eN",
    ),
    Code(
        "frame_gone",
        "The frame tab {tab} acts inside ({frame}) is gone: it was removed, or its page "
        "navigated; nothing was done",
        "bay frame main  (then bay snapshot -i; bay frame @eN again if the frame came back)",
    ),
    Code("action_failed", "'{verb}' failed on the page: {reason}", "bay snapshot -i"),
    Code(
        "route_unknown",
        "No route of this session matches {glob} (its routes: {routes}); nothing was removed",
        "bay network route  (lists your routes), then bay network unroute <one of them>",
    ),
    Code(
        "har_not_recording",
        "No HAR is being recorded for this session: nothing to stop",
        "bay network har start, do what you want recorded, then bay network har stop <file>",
    ),
    Code(
        "dialog_open",
        "Tab {tab} has a {kind} dialog open ({what}): the page's script waits for its answer, "
        "so '{verb}' did not run",
        "bay dialog accept [text]  or  bay dialog dismiss   (then run it again)",
    ),
    Code(
        "no_dialog",
        "No dialog is open on {where}",
        "{fix}",
    ),
    Code(
        "device_unknown",
        "No device is called {device!r} (close: {close}); nothing was changed",
        "bay set device '<one of the close names>'  (bay help set: Playwright's device names)",
    ),
    Code(
        "deadline",
        "'{verb}' did not finish within {timeout:g}s",
        "bay {verb} ... --timeout {longer:g}   (or bay wait --load first)",
        EXIT_DEADLINE,
    ),
    Code(
        "wait_timeout",
        "'wait' gave up after {timeout:g}s, still waiting for {waiting}: {seen}",
        "bay wait ... --timeout {longer:g}   (or bay snapshot -i: see what the page shows)",
        EXIT_DEADLINE,
    ),
    Code(
        "too_large",
        "{what} is {size} bytes; the limit is {limit} bytes",
        "{fix}",
    ),
    Code(
        "file_unreadable",
        "{path} cannot be sent: {reason}; nothing was sent",
        "name a regular file you can read (ls -l {path}); a path is read by your own bay, "
        "on your machine",
    ),
    Code(
        "file_unwritable",
        "{path} cannot be written: {reason}",
        "name a file in a directory you can write (an existing file there is replaced), or a "
        "directory to put it in",
    ),
    Code(
        "not_file_input",
        "{target} is not a file input (it is {found}): bay upload sets files on an "
        "<input type=file>",
        "bay snapshot -i, then bay upload on the file input (often hidden behind the "
        "'Upload' button: bay upload 'input[type=file]' FILE)",
    ),
    Code(
        "download_not_started",
        "'{verb}' on {target} started no download within {waited:g}s; nothing was kept",
        "bay snapshot -i (is it the link or button that downloads?); a download the page "
        "starts later is kept for you: bay downloads",
    ),
    Code(
        "download_quota",
        "The download {name} would pass this session's download bound ({limit}, "
        "BAY_DOWNLOAD_MAX_MB; {kept} kept); it was cancelled and nothing of it was kept",
        "bay downloads clear (or bay downloads get each, then clear), or ask the user to raise "
        "BAY_DOWNLOAD_MAX_MB",
    ),
    Code(
        "download_unknown",
        "No download of this session is called {name}",
        "bay downloads  (the ones kept for you, by name)",
    ),
    Code(
        "bad_frame",
        "The keeper could not read that frame: {reason}",
        "send one JSON object per line, UTF-8, under the frame limit (docs/protocol.md)",
    ),
    Code(
        "keeper_unavailable",
        "The keeper is not reachable: {reason}",
        "bay keeper logs   (then run the command again; the keeper starts by itself)",
    ),
    Code(
        "registry_url_bad",
        "BAY_REGISTRY is no PostgreSQL URL: {reason}; the keeper did not start",
        "set BAY_REGISTRY=postgresql://USER@HOST/DBNAME (or unset it: the SQLite file in "
        "BAY_HOME), then run the command again",
    ),
    Code(
        "registry_unreachable",
        "The registry at {where} cannot be used: {reason}; the keeper did not start",
        "start its server or fix BAY_REGISTRY (bay doctor checks it; when another keeper "
        "holds it, stop that one or give this one its own schema), then run the command "
        "again; unset BAY_REGISTRY for the SQLite file in BAY_HOME",
    ),
    Code(
        "socket_untrusted",
        "The keeper's socket {socket} is not safe to talk to: {reason}; nothing was sent",
        "{fix}",
    ),
    Code(
        "profile_unknown",
        "{handle} is not {why}",
        "{fix}",
    ),
    Code(
        "profile_required",
        "This session has {count} profiles attached; say which one (default: {default})",
        "bay <verb> ... --profile <handle>   (one of: {handles}), or bay pin <handle>",
    ),
    Code(
        "profile_changed",
        "This session's profiles were changed by someone else: was {was}, now {now}",
        "run the command again (it will act on {now_default}); bay status shows the set",
    ),
    Code(
        "profile_busy",
        "Profile {profile} is held by session {holder}{on_host} (group {group}) since {since}",
        "{fix}",
    ),
    Code("fleet_link_refused", "The fleet link {link} is refused: {reason}", "{fix}"),
    Code(
        "fleet_fenced",
        "This keeper (on {host}) has not renewed its fleet claims for {age} s "
        "(BAY_FLEET_TTL {ttl} s): its profiles' browsers were stopped, and it serves no verb "
        "until the registry answers it again, so that no profile runs on two keepers",
        "check the registry connection (bay doctor; bay keeper logs), then run the command "
        "again: the keeper serves again by itself once its heartbeat gets through; or run "
        "it on another keeper of the fleet (bay keeper status lists them)",
    ),
    Code(
        "profile_host_down",
        "Profile {profile}'s browser ran on keeper {keeper} on {host} (since {since}), which "
        "is gone, and its data cannot be reached from this keeper",
        "start the keeper on {host} again, or keep profiles' data on storage every keeper "
        "mounts (BAY_FLEET_DATA) so another keeper serves it; bay keeper status lists the fleet",
    ),
    Code(
        "browser_cap",
        "{limit} browsers already run on this machine (the BAY_MAX_BROWSERS ceiling): {listing}",
        "bay close --session <one of them>   (or bay keeper status; raise BAY_MAX_BROWSERS)",
    ),
    Code(
        "domain_refused",
        "{host} is outside this browser's allowed domains ({allowed})",
        "open a page on an allowed domain, or use a profile allowed to go there",
    ),
    Code(
        "devtools_refused",
        "{endpoint} is this browser's own DevTools endpoint: no tab may load it (it would hand "
        "out every tab's control socket)",
        "open a page of a site; to drive your own tab over CDP, use bay cdp-url",
    ),
    Code(
        "verb_refused",
        "'{verb}' was refused by the {plugin} plugin: {reason}",
        "{fix}",
    ),
    Code(
        "recording_running",
        "Tab {tab} is already being recorded to {path}",
        "bay record stop   (then bay record start <file> again)",
    ),
    Code("no_recording", "Nothing is being recorded in this session on this profile", "{fix}"),
    Code("recorder_unavailable", "Recording is not available here: {reason}", "{fix}"),
    Code(
        "approval_denied",
        "A human denied {what} ({by}); asked by {plugin}: {reason}",
        "do not run it again: tell the user it was denied and ask what to do instead",
    ),
    Code(
        "approval_timeout",
        "Nobody answered within {waited:g}s whether to {what}; asked by {plugin}: {reason}",
        "ask the user to open the live view (bay live) to approve it, then run it again "
        "(--timeout {longer:g} waits longer)",
    ),
    Code(
        "backend_no_key",
        "The {provider} provider needs a key: {integration} has no {field} ({reason})",
        "bay keys set {integration} {field}   (the value is read from stdin or a hidden prompt)",
    ),
    Code(
        "backend_seat_taken",
        "The {provider} provider has no free seat ({said_by} says so): {whose}",
        "{fix}",
    ),
    Code(
        "backend_key_invalid",
        "The {provider} provider's key was refused: {reason}",
        "bay keys set {integration} license_key   (bay keys list shows where the current key "
        "comes from; bay keys clear {integration} falls back to the cluster default or none)",
    ),
    Code(
        "provider_needs_local_key",
        "The {provider} provider needs a key that {where}; a key never leaves the machine "
        "that holds it",
        "{fix}",
    ),
    Code(
        "option_carries_key",
        "--{option} carries a credential ({part}): a provider option is stored in the "
        "registry, which every keeper of a fleet reads, and a key is never stored there",
        "give --{option} without it (if it was a real key, rotate it); a vendor that needs a "
        "key is a cloud provider: bay keys set <integration> api_key keeps it on this machine",
    ),
    Code(
        "secret_on_argv",
        "'{verb}' never takes the {arg} on the command line: it would be visible in the "
        "process list and your shell history (if it was a real key, rotate it)",
        "pipe the value into bay {command} on stdin (or run it in a terminal: hidden prompt)",
        EXIT_USAGE,
    ),
    Code(
        "secret_required",
        "'{verb}' needs {arg}, which is never taken from the command line",
        "pipe the value into bay {command} on stdin (a terminal: hidden prompt; API: args.{arg})",
    ),
    Code(
        "key_invalid",
        "That value for {integration} {field} was not stored: {reason}",
        "bay keys set {integration} {field}   ({expected})",
    ),
    Code(
        "key_store_unavailable",
        "No key store here can hold your own key: {reason}",
        "{fix}",
    ),
    Code(
        "key_test_no_host",
        "The {integration} key test cannot derive the one host it may reach: {reason}",
        "bay keys set {integration} {field}   (an https URL, e.g. {example})",
    ),
    Code(
        "key_test_failed",
        "The {integration} key test ({kind}) failed: {reason}",
        "{fix}",
    ),
    Code(
        "key_host_mismatch",
        "Your {integration} key was stored for {pinned}, but {field} now names {host}: a key "
        "is only sent to the host it was stored for",
        "bay keys set {integration} {secret}   (give the key again: it is then pinned to "
        "{host}), or set {field} back to {pinned}",
    ),
    Code(
        "display_unavailable",
        "The window display cannot be used: {reason}",
        "{fix}",
    ),
    Code("window_gone", "Window {window} is gone: {reason}", "bay window list"),
    Code(
        "not_your_window",
        "Window {window} is {held}; a session acts only on the windows it holds",
        "bay window list   (then bay window attach <handle> once it is free)",
    ),
    Code(
        "no_action",
        "{ref} ({role} '{name}') in window {window} offers no action, so it cannot be clicked "
        "by reference",
        "bay window snapshot {window}  (act on a node with actions=...), or "
        "bay window click {window} --at X,Y to click its pixels on purpose",
    ),
    Code(
        "injection_unavailable",
        "Input injection ({verb}) into window {window} is not available: {reason}",
        "act by reference instead (bay window click {window} @eN, bay window type {window} @eN "
        "TEXT); bay window doctor shows the probe matrix",
    ),
    Code(
        "accessibility_unavailable",
        "The accessibility tree of window {window} cannot be read: {reason}",
        "bay window doctor   (then bay window screenshot {window} to see it)",
    ),
    Code(
        "method_refused",
        "The CDP method {method} is refused {why}",
        "{fix}",
    ),
    Code(
        "script_deadline",
        "The script {script} did not finish within {timeout:g}s; in flight: {call}",
        "bay run {script} --timeout {longer:g}   (or make that step faster; its output is above)",
        EXIT_DEADLINE,
    ),
    Code(
        "script_failed",
        "The script {script} failed: {error}",
        "fix the script (line {line}) and run it again: bay run {script}",
    ),
    Code(
        "internal_error",
        "The keeper failed while running '{verb}': {reason}",
        "bay keeper logs   (and report it; nothing was changed on your behalf)",
    ),
    Code(
        "install_failed",
        "'bay {verb}' of {what} failed: {reason}",
        "{fix}",
    ),
    Code(
        "open_port_refused",
        "bay chrome would open a DevTools port on 127.0.0.1 that every local user and every "
        "process can drive without a credential: every tab, cookie and file of that browser "
        "({why})",
        "bay chrome --allow-open-port, only on a machine where no other user and no program you "
        "do not trust runs; otherwise use a chromium profile (bay new NAME), driven over a pipe",
    ),
    Code(
        "no_tls",
        "The live view would listen on {bind}, beyond loopback, without TLS: its links, "
        "credentials and every frame would cross the network in clear",
        "set BAY_LIVE_TLS=self-signed (or BAY_LIVE_TLS_CERT and BAY_LIVE_TLS_KEY), or "
        "BAY_LIVE_BIND=127.0.0.1 behind a TLS reverse proxy (BAY_LIVE_PUBLIC_URL); then bay "
        "keeper stop, and run bay live again",
    ),
    Code(
        "tls_unreadable",
        "The live view's TLS {what} cannot be used: {reason}",
        "{fix}; then bay keeper stop, and run bay live again",
    ),
    Code(
        "live_revoked",
        "This live-view credential was revoked ({why}): the page is cut off",
        "ask the agent or the owner for a new link (bay live)",
    ),
    Code(
        "disk_full",
        "'{verb}' could not write: the disk under {where} is full ({free} free; {reason})",
        "free space on that disk (or bay profiles, then bay forget <unused profile>), then run "
        "it again; the home is {where}",
    ),
    Code(
        "session_fixed",
        "This socket is session {fixed}'s: it cannot act as {what} {asked} ({via})",
        "drop {drop}: on this socket you are always session {fixed}; another session has its "
        "own socket (the human grants it: bay session grant ...)",
    ),
    Code(
        "owner_only",
        "'{what}' is the owner's to run: it is refused on a session socket",
        "ask the human to run it: {command}",
    ),
    Code(
        "profile_not_granted",
        "Profile {profile} is not granted to session {session}: a session socket uses only "
        "its own browser and the profiles its grant names",
        "work in your own browser (no --profile), or ask the human to run: {command}",
    ),
    Code(
        "grant_refused",
        "No session socket was granted for {session}: {reason}",
        "{fix}",
    ),
    Code(
        "session_socket_gone",
        "The session socket {socket} does not answer ({reason}): its grant was revoked or has "
        "expired, or its keeper is not running; a session socket never starts a keeper",
        "ask the human to grant it again: bay session grant <your session> --socket {socket}",
    ),
)

#: code name -> row. Closed: :func:`refusal` refuses a name that is not here.
CODES: dict[str, Code] = {row.name: row for row in _ROWS}


#: The most characters of one refusal field (and of a given way out) that are kept: a field
#: may carry an agent's input or a page's text (a 120 KB URL, a 5 MB error), which is never
#: echoed whole. The rest is said as ``…(+N)``, N the characters left out.
CLIP = 300


def clip(value: Any, limit: int = CLIP) -> Any:
    """``value`` with every string in it (inside lists and dicts too) cut to ``limit``
    characters plus ``…(+N)``; anything else unchanged. Clipping a clipped value changes
    nothing."""
    if isinstance(value, str):
        if len(value) <= limit:
            return value
        tail = value[limit:]
        if tail.startswith("…(+") and tail.endswith(")") and tail[3:-1].isdigit():
            return value  # clipped already
        return f"{value[:limit]}…(+{len(value) - limit})"
    if isinstance(value, list):
        return [clip(v, limit) for v in value]
    if isinstance(value, tuple):
        return tuple(clip(v, limit) for v in value)
    if isinstance(value, dict):
        return {k: clip(v, limit) for k, v in value.items()}
    return value


#: Characters no text output may carry to a terminal: the C0 controls but newline and tab
#: (ESC starts a sequence that sets the window title or clears the screen, BEL ends one),
#: DEL, and the C1 controls (U+009B is a CSI on its own).
_TERMINAL = tuple(map(chr, (*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0))))
#: In JSON, C0 controls are escaped by ``json.dumps`` itself; DEL and C1 are not.
_JSON = _TERMINAL[-33:]


def printable(text: str) -> str:
    """``text`` safe to print to a terminal: its control characters as ``\\x1b`` etc.

    One scan per control character (``in``, at ``memchr`` speed: ~0.2 ms for 50,000
    characters), not ``re``, which with ``enum`` costs the thin client ~5 ms to import."""
    for c in _TERMINAL:
        if c in text:
            text = text.replace(c, f"\\x{ord(c):02x}")
    return text


def json_safe(line: str) -> str:
    """A line of JSON (``ensure_ascii=False``) with DEL and C1 as ``\\u009b`` escapes too:
    outside strings JSON holds none of them, so the line stays the same JSON."""
    for c in _JSON:
        if c in line:
            line = line.replace(c, f"\\u{ord(c):04x}")
    return line


class _Blank(dict):  # type: ignore[type-arg]
    """Format mapping that leaves an unknown placeholder visible instead of raising."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def render(code: str, fields: dict[str, Any]) -> tuple[str, str]:
    """The message and way-out of ``code`` filled from ``fields``."""
    row = CODES[code]
    mapping = _Blank(fields)
    try:
        message = row.message.format_map(mapping)
    except (ValueError, TypeError):
        message = row.message
    try:
        way_out = row.way_out.format_map(mapping)
    except (ValueError, TypeError):
        way_out = row.way_out
    return message, way_out.strip()


def exit_code(code: str) -> int:
    row = CODES.get(code)
    return row.exit if row else EXIT_REFUSED


class Refusal(Exception):
    """A typed refusal: raised anywhere in the keeper, answered to the agent as a frame.

    ``fields`` fill the message and way-out templates of the code's row and become ``data``,
    each string in them clipped to :data:`CLIP` characters (so is ``way_out``). A plugin may
    pass ``way_out=`` to say a more specific next step.
    """

    def __init__(self, code: str, *, way_out: str | None = None, **fields: Any):
        if code not in CODES:
            raise ValueError(f"unknown refusal code {code!r}; add it to browserbay.refusals")
        # Every code, every field: the one place refusals are built clips what they echo.
        fields = clip(fields)
        way_out = clip(way_out)
        self.code = code
        self.fields = fields
        self.explicit_way_out = way_out
        message, default_way_out = render(code, fields)
        self.message = message
        self.way_out = way_out if way_out is not None else default_way_out
        super().__init__(f"{code}: {message}")

    def with_defaults(self, **defaults: Any) -> Refusal:
        """The same refusal with fields it left out filled in (e.g. the keeper adds the
        ``verb`` a policy plugin refused)."""
        missing = {k: v for k, v in defaults.items() if k not in self.fields}
        if not missing:
            return self
        return Refusal(self.code, way_out=self.explicit_way_out, **missing, **self.fields)

    def frame(self) -> dict[str, Any]:
        data = {k: v for k, v in self.fields.items() if _jsonable(v)}
        return {
            "ok": False,
            "code": self.code,
            "message": self.message,
            "way_out": self.way_out,
            "data": data,
        }


def _jsonable(value: object) -> bool:
    return value is None or isinstance(value, (str, int, float, bool, list, dict))


#: What an agent does about each code, grouped: the agent manual (``bay help``) prints one
#: line per group with its codes. A code in no group gets :data:`OTHERWISE` — stop and ask
#: the human — which the manual states once, without listing those codes: the default is the
#: safe remedy, and a new code costs the manual nothing (its budget is fixed, the table grows).
AGENT_REMEDIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "a fresh `bay snapshot -i`, then act on a new @eN",
        (
            "ref_stale",
            "target_not_found",
            "no_labels",
            "target_covered",
            "target_ambiguous",
            "not_a_frame",
            "action_failed",
            "no_action",
            "not_file_input",
            "download_not_started",
        ),
    ),
    (
        "the frame is gone: `bay frame main`, then a fresh `bay snapshot -i`",
        ("frame_gone",),
    ),
    (
        "a page dialog waits: bay dialog accept [text] | dismiss",
        ("dialog_open", "no_dialog"),
    ),
    (
        "a human holds the controls: wait, then run it again after the handback",
        ("browser_paused", "browser_interrupted"),
    ),
    (
        "run it again as the way out says (a longer --timeout, after bay keeper logs)",
        (
            "profile_changed",
            "deadline",
            "wait_timeout",
            "script_deadline",
            "keeper_unavailable",
            "browser_restarting",
        ),
    ),
    (
        "your downloads: bay downloads (list, get, clear)",
        ("download_quota", "download_unknown"),
    ),
    (
        "name the profile: --profile H or bay pin H (bay status, bay profiles list them)",
        ("profile_required", "profile_unknown"),
    ),
    (
        "on a session socket you are its session: drop --session, BAY_SESSION, BAY_GROUP",
        ("session_fixed",),
    ),
    (
        "only your own tabs and windows: bay tab list, bay window list",
        ("not_your_tab", "tab_gone", "window_gone", "not_your_window"),
    ),
    (
        "fix the command (bay help <verb>); secrets go on stdin, never in argv",
        (
            "usage",
            "too_large",
            "file_unreadable",
            "file_unwritable",
            "recording_running",
            "no_recording",
            "bad_frame",
            "secret_on_argv",
            "secret_required",
            "script_failed",
            "no_proposal",
            "route_unknown",
            "har_not_recording",
            "device_unknown",
            "option_missing",
        ),
    ),
    (
        "this provider or page cannot do it: take the other road the way out names",
        (
            "capability_missing",
            "local_scheme_refused",
            "injection_unavailable",
            "accessibility_unavailable",
            "method_refused",
        ),
    ),
)

#: The manual's line for every code in no group of :data:`AGENT_REMEDIES`.
OTHERWISE = "stop and ask the human, quoting code and way out; never work around it"


def remedy_lines() -> list[tuple[str, list[str]]]:
    """(what to do, codes) for every code in the table, each code exactly once, in the
    table's order within a group; codes no group names come last under :data:`OTHERWISE`."""
    order = {name: n for n, name in enumerate(CODES)}
    named: set[str] = set()
    lines: list[tuple[str, list[str]]] = []
    for text, codes in AGENT_REMEDIES:
        present = sorted((c for c in codes if c in CODES), key=order.__getitem__)
        named.update(present)
        if present:
            lines.append((text, present))
    rest = [c for c in CODES if c not in named]
    if rest:
        lines.append((OTHERWISE, rest))
    return lines
