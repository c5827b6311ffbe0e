"""browserbay-keys-file: a key source plugin (see docs/keys.md)."""
