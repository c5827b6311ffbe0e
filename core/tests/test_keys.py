"""Key resolution in the core (browserbay.keys) and the key-test runners (browserbay.keytest):
precedence, masking, the one reveal into a child's environment, the named refusals, and the
runner that may reach only the host derived from its row's own field — with the negative
control of a runner whose host is a constant. No keeper, no browser; the "vendor" is
browserbay_testing.fakevendor, a local fake of a vendor's documented key check."""

from __future__ import annotations

import functools
import json
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from browserbay import keys as keys_module
from browserbay import scrub
from browserbay.keys import (
    PIN_SUFFIX,
    BookAdmin,
    KeyBook,
    Masked,
    Secret,
    env_name,
    key_environ,
    origin,
    seal_environment,
)
from browserbay.keytest import Target, derive_target, run_test
from browserbay.model import (
    Capabilities,
    Exchange,
    IntegrationRow,
    KeyField,
    KeySource,
    KeyVerdict,
    ProviderRow,
)
from browserbay.refusals import Refusal
from browserbay_testing import assert_refused
from browserbay_testing.fakevendor import FakeVendor

KEY = "kd_user0123456789abcdWXYZ"
CLUSTER_KEY = "kd_cluster0123456789abQRST"

ROW = IntegrationRow(
    "cloud:example",
    (
        KeyField("api_key", secret=True, pattern=r"kd_[A-Za-z0-9]{16,}"),
        KeyField("api_url", secret=False, required=False, default="https://api.example.com"),
    ),
    vendor_env={"api_key": "EXAMPLE_API_KEY"},
    test_kind="credential-exchange",
    exchange=Exchange("api_url", "/v1/check", headers={"X-Api-Key": "{api_key}"}),
)


class Store:
    """An in-memory key source that counts what it is asked."""

    def __init__(self, values: dict[tuple[str, str], str] | None = None):
        self.values = dict(values or {})
        self.asked: list[tuple[str, str]] = []
        self.fail: str | None = None

    def get(self, integration: str, field: str) -> str | None:
        self.asked.append((integration, field))
        if self.fail:
            raise RuntimeError(self.fail)
        return self.values.get((integration, field))

    def set(self, integration: str, field: str, value: str) -> None:
        self.values[(integration, field)] = value

    def delete(self, integration: str, field: str) -> None:
        self.values.pop((integration, field), None)


def _book(user: Store, cluster: Store, *rows: IntegrationRow) -> KeyBook:
    sources = {
        "mine": KeySource("mine", "user", user.get, set=user.set, delete=user.delete),
        "team": KeySource("team", "cluster", cluster.get),
    }
    rows = rows or (ROW,)
    return KeyBook(sources, {r.id: r for r in rows})


def _provider(pid: str = "cloud:example", **caps: Any) -> ProviderRow:
    caps.setdefault("key_scope", "user_or_cluster")
    return ProviderRow(pid, 2, "test", Capabilities(**caps), driver_factory=None)


# -- secrets and views -----------------------------------------------------------------------


def test_a_secret_is_masked_everywhere_it_could_leak() -> None:
    secret = Secret(KEY)
    assert repr(secret) == str(secret) == "Secret(••••WXYZ)"
    assert KEY not in f"{secret} {secret!r} {[secret]}"
    with pytest.raises(TypeError):
        json.dumps({"key": secret})
    with pytest.raises(TypeError):
        pickle.dumps(secret)
    view = secret.masked()
    assert isinstance(view, Masked)
    assert view.text == "••••WXYZ"
    assert Secret("short-key").masked().text == "••••"  # a short value shows no tail


def test_cluster_variable_names() -> None:
    assert env_name("cloud:browser-use", "api_key") == "BAY_INTEGRATION_CLOUD_BROWSER_USE_API_KEY"
    assert env_name("cloak", "license_key") == "BAY_INTEGRATION_CLOAK_LICENSE_KEY"


def test_sealing_moves_key_variables_out_of_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(keys_module, "_sealed", None)
    env = {
        "PATH": "/bin",
        "BAY_INTEGRATION_CLOAK_LICENSE_KEY": "cb_x",
        "BAY_INTEGRATIONS": "[]",
        "BAY_KEYS_PASSPHRASE": "pw",
        "BAY_HOME": "/h",
    }
    moved = seal_environment(env)
    assert moved == ["BAY_INTEGRATIONS", "BAY_INTEGRATION_CLOAK_LICENSE_KEY", "BAY_KEYS_PASSPHRASE"]
    assert env == {"PATH": "/bin", "BAY_HOME": "/h"}
    assert key_environ()["BAY_INTEGRATION_CLOAK_LICENSE_KEY"] == "cb_x"


def test_sealing_moves_the_fleet_secret_and_a_registry_url_with_a_password(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 22: the link's secret and a registry password are keys too; a registry URL
    without a password stays where it is (nothing to hide, and nothing to re-exec for)."""
    monkeypatch.setattr(keys_module, "_sealed", None)
    with_pw = "postgresql://bay:s3cret-pw@db.internal/bay"
    env = {"BAY_FLEET_SECRET": "f" * 40, "BAY_REGISTRY": with_pw, "BAY_FLEET_TTL": "15"}
    assert seal_environment(env) == ["BAY_FLEET_SECRET", "BAY_REGISTRY"]
    assert env == {"BAY_FLEET_TTL": "15"}
    assert keys_module.registry_url() == with_pw
    assert "s3cret-pw" not in scrub.scrub(f"connecting with s3cret-pw to {with_pw}")
    plain = {"BAY_REGISTRY": "postgresql://bay@db.internal/bay?host=/run/pg"}
    monkeypatch.setattr(keys_module, "_sealed", None)
    assert seal_environment(plain) == []
    assert keys_module.registry_password("postgresql://u@h/d?password=qp") == "qp"
    assert keys_module.registry_password("postgresql://u:p%40x@h/d") == "p@x"
    assert keys_module.registry_password("") is None


def test_sealing_moves_pgpassword_and_the_registry_url_then_carries_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """libpq's ``PGPASSWORD`` is the registry's password by another road: before, it stayed
    in the keeper's environment and every child's (the driver, each browser). Sealed, it is
    in no environment, libpq's included, so the keeper's URL carries it; shown, it is
    blotted out either way."""
    from browserbay.registry.db import redact

    monkeypatch.setattr(keys_module, "_sealed", None)
    url = "postgresql://bay@db.internal/bay?host=/run/pg"
    monkeypatch.setenv("BAY_REGISTRY", url)
    env = {"PGPASSWORD": "pg-s3cret/&=pw", "PGHOST": "db.internal"}
    assert seal_environment(env) == ["PGPASSWORD"]
    assert env == {"PGHOST": "db.internal"}
    carried = keys_module.registry_url()
    assert carried.startswith(url + "&password=")
    assert keys_module.registry_password(carried) == "pg-s3cret/&=pw"
    assert "pg-s3cret" not in redact(carried)
    assert redact(carried) == url + "&password=***"
    assert "pg-s3cret" not in scrub.scrub("auth failed for pg-s3cret/&=pw")
    # A URL with a password of its own keeps it (libpq would prefer it too).
    own = "postgresql://bay:own-pw@db.internal/bay"
    monkeypatch.setenv("BAY_REGISTRY", own)
    assert keys_module.registry_url() == own
    # Not sealed (``bay doctor``): libpq reads the variable itself; the URL is as given.
    monkeypatch.setattr(keys_module, "_sealed", None)
    monkeypatch.setenv("BAY_REGISTRY", url)
    monkeypatch.setenv("PGPASSWORD", "pg-s3cret/&=pw")
    assert keys_module.registry_url() == url


def test_the_fleet_secret_file_must_be_private_and_long_enough(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(keys_module, "_sealed", {})
    secret_file = tmp_path / "fleet.secret"
    secret_file.write_text("a" * 64 + "\n")
    secret_file.chmod(0o644)
    env = {"BAY_FLEET_SECRET_FILE": str(secret_file)}
    with pytest.raises(keys_module.FleetSecretError, match="may be read by others"):
        keys_module.fleet_secret(env)
    secret_file.chmod(0o600)
    found = keys_module.fleet_secret(env)
    assert found is not None
    assert found.reveal() == "a" * 64
    assert "a" * 64 not in repr(found)
    secret_file.write_text("short")
    with pytest.raises(keys_module.FleetSecretError, match="fewer than 32") as short:
        keys_module.fleet_secret(env)
    assert "short" not in str(short.value)  # the message never holds the value
    link = tmp_path / "link"
    link.symlink_to(secret_file)
    with pytest.raises(keys_module.FleetSecretError, match="cannot be read"):
        keys_module.fleet_secret({"BAY_FLEET_SECRET_FILE": str(link)})
    assert keys_module.fleet_secret({}) is None


# -- precedence ------------------------------------------------------------------------------


def test_three_precedence_states_give_three_sources_and_never_mix() -> None:
    user, cluster = Store(), Store()
    book = _book(user, cluster)
    none = book.resolve(ROW.id)
    assert (none.source, none.missing) == ("none", ("api_key",))
    assert none.origin == {"api_url": "default"}

    cluster.values[(ROW.id, "api_key")] = CLUSTER_KEY
    cluster.values[(ROW.id, "api_url")] = "https://team.example.com"
    res = book.resolve(ROW.id)
    assert (res.source, res.missing) == ("cluster", ())
    assert res.values["api_key"].reveal() == CLUSTER_KEY

    user.values[(ROW.id, "api_key")] = KEY
    res = book.resolve(ROW.id)
    assert res.source == "user"
    assert res.values["api_key"].reveal() == KEY
    # Never mixed: the user's key goes with the row's default URL, not the cluster's URL.
    assert res.values["api_url"].reveal() == "https://api.example.com"
    assert res.origin == {"api_key": "mine", "api_url": "default"}

    assert book.clear(ROW.id) == ["mine"]
    assert book.resolve(ROW.id).source == "cluster"  # lands where precedence lands


def test_a_failing_user_store_is_named_and_never_falls_back_to_the_cluster() -> None:
    user, cluster = Store(), Store({(ROW.id, "api_key"): CLUSTER_KEY})
    user.fail = "the keychain is locked: unlock it"
    res = _book(user, cluster).resolve(ROW.id)
    assert res.source == "none"
    assert res.problems == ("the mine key store failed: the keychain is locked: unlock it",)
    assert cluster.asked == []  # negative control would have answered with the cluster key


def test_key_scope_narrows_the_sources_a_provider_accepts() -> None:
    user, cluster = Store(), Store({(ROW.id, "api_key"): CLUSTER_KEY})
    book = _book(user, cluster)
    assert book.resolve(ROW.id, accept=("user",)).source == "none"
    frame = assert_refused(
        _refusal(lambda: book.child_env(_provider(key_scope="user"))), "backend_no_key"
    )
    assert "takes only your own key" in frame["message"]
    env = book.child_env(_provider(key_scope="user_or_cluster"))
    assert env == {"EXAMPLE_API_KEY": CLUSTER_KEY}


# -- the one reveal ----------------------------------------------------------------------------


def _refusal(fn: Callable[[], object]) -> Refusal:
    with pytest.raises(Refusal) as info:
        fn()
    return info.value


def test_child_env_carries_only_vendor_names_and_refuses_without_a_key() -> None:
    user, cluster = Store(), Store()
    book = _book(user, cluster)
    frame = assert_refused(_refusal(lambda: book.child_env(_provider())), "backend_no_key")
    assert frame["data"]["integration"] == "cloud:example"
    assert frame["data"]["field"] == "api_key"
    assert frame["way_out"].startswith("bay keys set cloud:example api_key")
    user.values[(ROW.id, "api_key")] = KEY
    env = book.child_env(_provider())
    assert env == {"EXAMPLE_API_KEY": KEY}  # api_url has no vendor name: not handed on
    assert book.child_env(_provider(key_scope="none")) == {}


def test_a_remote_key_bearing_provider_is_refused_before_anything_is_resolved() -> None:
    user, cluster = Store({(ROW.id, "api_key"): KEY}), Store()
    book = _book(user, cluster)
    frame = assert_refused(
        _refusal(lambda: book.child_env(_provider(remote_host=True))), "provider_needs_local_key"
    )
    assert frame["data"]["provider"] == "cloud:example"
    assert user.asked == []
    assert cluster.asked == []
    # Negative control: the same row on this machine does resolve (and reads the store).
    book.child_env(_provider())
    assert user.asked


def test_a_remote_provider_without_keys_is_fine() -> None:
    book = _book(Store(), Store())
    assert book.child_env(_provider(key_scope="none", remote_host=True)) == {}


# -- writes ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("", "it is empty"),
        ("kd_ has spaces 0123456789", "whitespace"),
        ("sk_wrongprefix0123456789", "expected shape"),
    ],
)
def test_a_malformed_value_is_refused_without_echoing_it(value: str, reason: str) -> None:
    user = Store()
    book = _book(user, Store())
    frame = assert_refused(_refusal(lambda: book.set(ROW.id, "api_key", value)), "key_invalid")
    assert reason in frame["message"]
    if value:
        assert value not in json.dumps(frame)
    assert user.values == {}


def test_set_answers_a_masked_view_and_unknown_names_are_usage() -> None:
    user = Store()
    book = _book(user, Store())
    stored = book.set(ROW.id, "api_key", KEY)
    store, view = stored.store, stored.view
    assert (store, view) == ("mine", "••••WXYZ")
    assert stored.pinned == "https://api.example.com"  # the documented default's origin
    assert user.values == {
        (ROW.id, "api_key"): KEY,
        (ROW.id, "api_url" + PIN_SUFFIX): "https://api.example.com",
    }
    assert_refused(_refusal(lambda: book.set("cloud:nope", "api_key", KEY)), "usage")
    assert_refused(_refusal(lambda: book.set(ROW.id, "nope", KEY)), "usage")
    admin_view = BookAdmin(book, run_test).view(ROW.id)
    assert KEY not in json.dumps(admin_view)
    assert admin_view["fields"][0]["view"] == "••••WXYZ"


def test_no_writable_store_is_a_named_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = Store()
    book = KeyBook({"team": KeySource("team", "cluster", cluster.get)}, {ROW.id: ROW})
    frame = assert_refused(
        _refusal(lambda: book.set(ROW.id, "api_key", KEY)), "key_store_unavailable"
    )
    assert "browserbay-keys-file" in frame["way_out"]
    user = Store()
    book = _book(user, cluster)
    monkeypatch.setenv("BAY_KEYS_STORE", "elsewhere")
    assert_refused(_refusal(lambda: book.set(ROW.id, "api_key", KEY)), "key_store_unavailable")
    monkeypatch.setenv("BAY_KEYS_STORE", "mine")
    assert book.set(ROW.id, "api_key", KEY).store == "mine"


# -- key tests -------------------------------------------------------------------------------


def _vendor(key: str = KEY) -> FakeVendor:
    return FakeVendor("/v1/check", headers={"X-Api-Key": key}).start()


def _pointed_at(vendor: FakeVendor) -> tuple[KeyBook, Store]:
    user = Store(
        {
            (ROW.id, "api_key"): KEY,
            (ROW.id, "api_url"): vendor.url,
            (ROW.id, "api_url" + PIN_SUFFIX): origin(vendor.url),  # stored for that vendor
        }
    )
    return _book(user, Store()), user


Runner = Callable[..., KeyVerdict]


def check_runner_reaches_only_the_derived_host(runner: Runner) -> None:
    """The property every network runner must have: driven twice, with the row's URL field
    naming vendor A and then vendor B, each request reaches exactly the named vendor, once."""
    a, b = _vendor(), _vendor()
    try:
        for named, other in ((a, b), (b, a)):
            book, _ = _pointed_at(named)
            before_named, before_other = len(named.requests), len(other.requests)
            verdict = runner(ROW, book.resolve(ROW.id))
            assert len(named.requests) == before_named + 1, "the named host got no request"
            assert len(other.requests) == before_other, "a host the row did not name was reached"
            assert verdict.ok, verdict
            assert verdict.host == named.host, verdict
    finally:
        a.stop()
        b.stop()


def test_the_credential_exchange_runner_reaches_only_the_host_its_row_names() -> None:
    check_runner_reaches_only_the_derived_host(run_test)


def test_negative_control_a_runner_with_a_constant_host_fails_that_test() -> None:
    constant = _vendor()
    try:

        def constant_host(row: IntegrationRow, res: Any) -> Target:
            return Target(constant.url, constant.host, "api_url")

        with pytest.raises(AssertionError):
            check_runner_reaches_only_the_derived_host(
                functools.partial(run_test, target_of=constant_host)
            )
    finally:
        constant.stop()


def test_the_exchange_sends_the_key_once_and_a_wrong_key_fails_by_name() -> None:
    with FakeVendor("/v1/check", headers={"X-Api-Key": "kd_someoneelse0123456789"}) as vendor:
        book, _ = _pointed_at(vendor)
        verdict = run_test(ROW, book.resolve(ROW.id))
        assert not verdict.ok
        assert verdict.detail == f"{vendor.host} refused the key (HTTP 401)"
        assert verdict.fix.startswith("bay keys set cloud:example api_key")
        (seen,) = vendor.requests
        assert seen.headers["x-api-key"] == KEY
        assert seen.path == "/v1/check"
        assert KEY not in json.dumps(verdict.as_row())


def test_a_runner_that_cannot_derive_its_host_refuses_by_name() -> None:
    user = Store({(ROW.id, "api_key"): KEY, (ROW.id, "api_url"): "http://vendor.example.com"})
    res = _book(user, Store()).resolve(ROW.id)
    frame = assert_refused(_refusal(lambda: run_test(ROW, res)), "key_test_no_host")
    assert "plain http to another machine" in frame["message"]
    no_default = IntegrationRow(
        "cloud:bare",
        (KeyField("api_key", secret=True), KeyField("api_url", secret=False, required=False)),
        vendor_env={},
        test_kind="credential-exchange",
        exchange=Exchange("api_url", "/"),
    )
    res = _book(Store({("cloud:bare", "api_key"): KEY}), Store(), no_default).resolve("cloud:bare")
    frame = assert_refused(_refusal(lambda: derive_target(no_default, res)), "key_test_no_host")
    assert frame["data"]["field"] == "api_url"
    assert "no value and no default" in frame["message"]


def test_shape_only_uses_no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    import browserbay.keytest as keytest

    def no_network(*args: object) -> int:
        raise AssertionError("a shape-only test made a request")

    monkeypatch.setattr(keytest, "one_request", no_network)
    row = IntegrationRow(
        "cloak-like",
        (KeyField("license_key", secret=True, required=False, pattern=r"cb_\w{8,}"),),
        vendor_env={"license_key": "X_LICENSE"},
    )
    book = _book(Store({("cloak-like", "license_key"): "cb_12345678abc"}), Store(), row)
    assert run_test(row, book.resolve("cloak-like")).ok
    bad = _book(Store({("cloak-like", "license_key"): "nope-1234567"}), Store(), row)
    verdict = run_test(row, bad.resolve("cloak-like"))
    assert not verdict.ok
    assert "expected shape" in verdict.detail


def test_reachability_sends_no_key() -> None:
    row = IntegrationRow(
        ROW.id, ROW.fields, ROW.vendor_env, test_kind="reachability", exchange=ROW.exchange
    )
    with _vendor() as vendor:
        book, _ = _pointed_at(vendor)
        verdict = run_test(row, book.resolve(ROW.id))
        assert verdict.ok
        assert verdict.detail == f"{vendor.host} answered HTTP 401"
        (seen,) = vendor.requests
        assert "x-api-key" not in seen.headers


def test_an_unreachable_host_is_a_failed_verdict_naming_it() -> None:
    vendor = _vendor()
    book, _ = _pointed_at(vendor)
    vendor.stop()  # nothing listens there now
    verdict = run_test(ROW, book.resolve(ROW.id), timeout=2)
    assert not verdict.ok
    assert verdict.detail.startswith(f"cannot reach {vendor.host}")
