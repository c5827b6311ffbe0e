"""browserbay-keys-keyring: a key source plugin (see docs/keys.md)."""
