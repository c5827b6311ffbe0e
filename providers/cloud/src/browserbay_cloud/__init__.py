"""browserbay-cloud: hosted-browser vendors (tier 2): their rows, keys first."""
