"""The entry point that makes ``bay plugins`` list browserbay-mcp. It contributes no hook:
the server runs in ``bay mcp`` (a client of the keeper), not inside the keeper, so the keeper
imports only this light module, never the MCP SDK."""
