"""The guard's decision for one hop (browserbay.keeper.guard.hop_refusal), without a browser:
the end-to-end attacks are in tests/test_fence_hops.py and providers/cdp/tests/test_hops.py."""

from __future__ import annotations

from browserbay.keeper.guard import devtools_ports, hop_refusal


class _Handle:
    def __init__(self, url: object):
        self.cdp_url = url


def test_the_devtools_port_is_refused_on_every_host() -> None:
    for url in (
        "http://127.0.0.1:9222/json/list",
        "http://localhost:9222/json",
        "http://LOCALHOST.:9222/json",
        "http://a.localhost:9222/json",
        "http://127.0.0.2:9222/",
        "http://[::1]:9222/json/version",
        "http://0.0.0.0:9222/json",
        "ws://127.0.0.1:9222/devtools/browser/x",
        "http://192.0.2.2:9222/json/list",  # this machine's other address: a browser on 0.0.0.0
        "http://example.org:9222/",  # a remote cdp browser's own host
    ):
        refused = hop_refusal(url, (), (9222,))
        assert refused is not None, url
        assert refused[0] == "devtools_refused", url
    for url in ("http://127.0.0.1:9223/", "http://example.org/", "http://127.0.0.1/"):
        assert hop_refusal(url, (), (9222,)) is None, url


def test_the_fence_allows_its_domains_and_their_subdomains() -> None:
    fence = ("example.org",)
    assert hop_refusal("https://www.example.org/a", fence, ()) is None
    assert hop_refusal("data:text/html,x", fence, ()) is None
    refused = hop_refusal("https://example.org.evil.test/", fence, ())
    assert refused == (
        "domain_refused",
        {"host": "example.org.evil.test", "allowed": "example.org"},
    )
    assert hop_refusal("file:///etc/passwd", fence, ()) == (
        "local_scheme_refused",
        {"scheme": "file", "url": "file:///etc/passwd"},
    )


def test_a_cdp_url_with_a_port_names_the_port_to_guard() -> None:
    assert devtools_ports(_Handle("ws://127.0.0.1:41000/devtools/browser/x")) == (41000,)
    assert devtools_ports(_Handle("ws://10.0.0.5:9222/devtools/browser/x")) == (9222,)
    assert devtools_ports(_Handle("wss://vendor.example/connect?token=x")) == ()
    assert devtools_ports(_Handle(None)) == ()
