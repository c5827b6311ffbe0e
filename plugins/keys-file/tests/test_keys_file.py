"""keys-file: AES-GCM entries bound to their slot, the key in a private 0600 file or derived
from BAY_KEYS_PASSPHRASE with scrypt (parameters stored with the data), and errors that say
how to fix the store without ever quoting a value. Speed is measured in bench/keys_file.py."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from browserbay import keys
from browserbay.model import KeySource
from browserbay_keys_file import plugin, store
from browserbay_keys_file.store import FileStore, KeyFileError

KEY = "sk_file0123456789abcdEFGH"


def test_set_get_delete_with_a_key_file(tmp_path: Path) -> None:
    s = FileStore(tmp_path / "keys")
    assert s.get("cloud:steel", "api_key") is None
    s.set("cloud:steel", "api_key", KEY)
    s.set("cloak", "license_key", "cb_0123456789")
    assert s.get("cloud:steel", "api_key") == KEY
    assert FileStore(tmp_path / "keys").get("cloak", "license_key") == "cb_0123456789"
    s.delete("cloud:steel", "api_key")
    s.delete("cloud:steel", "api_key")  # no error when there is none
    assert s.get("cloud:steel", "api_key") is None
    for name in ("keys.json", "keys.key"):
        mode = stat.S_IMODE((tmp_path / "keys" / name).stat().st_mode)
        assert mode == 0o600, (name, oct(mode))
    assert stat.S_IMODE((tmp_path / "keys").stat().st_mode) == 0o700
    doc = json.loads((tmp_path / "keys" / "keys.json").read_text())
    assert doc["kdf"] == {"name": "file", "key_file": "keys.key"}


def test_no_plaintext_on_disk_and_entries_are_bound_to_their_slot(tmp_path: Path) -> None:
    s = FileStore(tmp_path)
    s.set("cloud:steel", "api_key", KEY)
    s.set("cloud:kernel", "api_key", "sk_other0123456789")
    for path in tmp_path.iterdir():
        assert KEY.encode() not in path.read_bytes(), path
    doc = json.loads(s.data.read_text())
    entries = doc["entries"]
    entries["cloud:kernel/api_key"] = entries["cloud:steel/api_key"]  # swap a ciphertext
    s.data.write_text(json.dumps(doc))
    with pytest.raises(KeyFileError, match="does not decrypt; set it again"):
        s.get("cloud:kernel", "api_key")


def test_a_key_file_others_can_read_is_refused(tmp_path: Path) -> None:
    s = FileStore(tmp_path)
    s.set("cloak", "license_key", "cb_0123456789")
    os.chmod(s.key_file, 0o644)
    with pytest.raises(KeyFileError, match=f"chmod 600 {s.key_file}"):
        s.get("cloak", "license_key")


def test_a_passphrase_store_keeps_its_scrypt_parameters_and_names_a_wrong_one(
    tmp_path: Path,
) -> None:
    s = FileStore(tmp_path, passphrase="correct horse")
    s.set("cloud:steel", "api_key", KEY)
    assert not s.key_file.exists()
    kdf = json.loads(s.data.read_text())["kdf"]
    assert kdf["name"] == "scrypt"
    assert (kdf["n"], kdf["r"], kdf["p"]) == (store.SCRYPT_N, store.SCRYPT_R, store.SCRYPT_P)
    assert len(store._unb64(kdf["salt"])) == 16
    assert FileStore(tmp_path, passphrase="correct horse").get("cloud:steel", "api_key") == KEY
    with pytest.raises(KeyFileError, match="BAY_KEYS_PASSPHRASE differs"):
        FileStore(tmp_path, passphrase="wrong").get("cloud:steel", "api_key")
    with pytest.raises(KeyFileError, match="set BAY_KEYS_PASSPHRASE"):
        FileStore(tmp_path).get("cloud:steel", "api_key")
    with pytest.raises(KeyFileError, match="differs"):
        FileStore(tmp_path, passphrase="wrong").set("cloak", "license_key", "cb_0123456789")


def test_a_corrupt_store_is_named(tmp_path: Path) -> None:
    s = FileStore(tmp_path)
    tmp_path.joinpath("keys.json").write_text("{not json")
    with pytest.raises(KeyFileError, match="is not valid JSON"):
        s.get("x", "y")


def test_the_plugin_uses_the_data_dir_and_the_sealed_passphrase(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (source,) = plugin.bay_key_sources()
    assert isinstance(source, KeySource)
    assert (source.name, source.precedence) == ("file", "user")
    monkeypatch.setenv("BAY_HOME", str(tmp_path))
    monkeypatch.setattr(keys, "_sealed", {"BAY_KEYS_PASSPHRASE": "pw-from-the-keeper"})
    assert source.set is not None
    assert source.delete is not None
    source.set("cloud:steel", "api_key", KEY)
    data = tmp_path / "data" / "keys" / "keys.json"
    assert json.loads(data.read_text())["kdf"]["name"] == "scrypt"
    assert source.get("cloud:steel", "api_key") == KEY
    source.delete("cloud:steel", "api_key")
    assert source.get("cloud:steel", "api_key") is None
