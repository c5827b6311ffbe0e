"""browserbay-phone: an example third-party provider (``phone``, tier 1) that runs a local
Chromium emulating a phone. docs/plugin-guide.md is the tutorial built on it."""
