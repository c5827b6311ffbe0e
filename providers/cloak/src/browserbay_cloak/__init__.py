"""browserbay-cloak: the CloakBrowser provider (tier 2): its rows, keys first."""
