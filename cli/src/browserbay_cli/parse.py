"""argv -> (verb, args, options): :mod:`browserbay.argv`, where the keeper parses a warm
verb's argv too (the CLI's warm road, :mod:`browserbay_cli.hot`). Kept under this name for
the callers that import it from the CLI."""

from browserbay.argv import UsageError, help_text, not_installed_lines, parse, suggest, usage_line

__all__ = ["UsageError", "help_text", "not_installed_lines", "parse", "suggest", "usage_line"]
