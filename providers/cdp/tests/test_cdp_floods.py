"""Silent connections to the scoped CDP endpoint (another local user can reach its loopback
port): capped and closed after the handshake timeout (docs/security.md §5)."""

from __future__ import annotations

from urllib.parse import urlsplit

from browserbay_testing import Bay
from browserbay_testing.floods import assert_preauth_bounded


def test_silent_connections_to_the_scoped_endpoint_are_capped_and_time_out(
    cbay: Bay, work: str, demo: str
) -> None:
    cbay.ok("use", work, session="fl")
    cbay.ok("open", demo + "/", session="fl")
    port = urlsplit(cbay.ok("cdp-url", session="fl")["url"]).port
    assert port
    pid = cbay.keeper_pid()
    assert_preauth_bounded(pid, port)
    assert cbay.keeper_pid() == pid
