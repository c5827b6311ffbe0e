"""browserbay provider: local Chromium."""
