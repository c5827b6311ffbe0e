"""browserbay-keys-env: a key source plugin (see docs/keys.md)."""
