"""browserbay provider: a browser reached at a CDP URL, and the session-scoped CDP endpoint."""
