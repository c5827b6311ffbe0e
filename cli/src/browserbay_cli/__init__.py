"""The `bay` command."""
