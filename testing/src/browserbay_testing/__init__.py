"""browserbay's test support — a dev-only distribution (``browserbay-testing``), listed in
the workspace's dev dependency group and never a dependency of a product distribution, so
nothing here ships in a product wheel.

- :mod:`browserbay_testing.plugin` — the pytest plugin (entry point ``pytest11``): the shared
  fixtures ``demo``, ``bay``, ``fresh_bay``, ``session_name``, ``place``, ``debug_browser``,
  ``viewer_browser``, ``viewer``, ``remote_address`` and ``nobody``;
- :mod:`browserbay_testing.bay` — :class:`Bay` (the real ``bay`` CLI against one home) and
  its :class:`Result`, :func:`wait_for`, :func:`wait_for_no_keeper`;
- :mod:`browserbay_testing.refusals` — :func:`assert_refused` (code, message, way out, exit
  status);
- ``keeper_plugins/`` — the test plugins a test keeper loads with ``BAY_PLUGIN_MODULES``
  (``recorder``, ``greeter``, ``keyed``, …), on its ``PYTHONPATH``;
- fakes, each written against the vendor's documented contract and named as a fake:
  :mod:`~browserbay_testing.fakevendor` (a cloud vendor's key check),
  :mod:`~browserbay_testing.fakecloak` (CloakBrowser's download host);
- the other roads a test drives: :mod:`~browserbay_testing.cdp` (somebody else's Chromium),
  :mod:`~browserbay_testing.hopserver` (redirect hops), :mod:`~browserbay_testing.asuser`
  (a keeper run as ``nobody``), :mod:`~browserbay_testing.secretservice` (a private
  Secret Service), :mod:`~browserbay_testing.keys`, :mod:`~browserbay_testing.floods`,
  :mod:`~browserbay_testing.bwrap` (an agent under bubblewrap with only its session socket),
  :mod:`~browserbay_testing.planted` (a socket another uid planted, and its victim).

The provider conformance suite is not here: it is the core's public API for provider
authors (``browserbay.testing.check_provider``).
"""

from browserbay_testing.bay import BAY, KEEPER_PLUGINS, Bay, Result, wait_for, wait_for_no_keeper
from browserbay_testing.refusals import assert_refused

__all__ = [
    "BAY",
    "KEEPER_PLUGINS",
    "Bay",
    "Result",
    "assert_refused",
    "wait_for",
    "wait_for_no_keeper",
]
