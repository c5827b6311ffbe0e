"""browserbay-mcp: a stdio MCP server that drives the keeper through browserbay.Client."""
