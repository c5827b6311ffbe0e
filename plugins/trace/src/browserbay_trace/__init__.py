"""browserbay's action trace: before/after frames of every page action and an HTML report."""
