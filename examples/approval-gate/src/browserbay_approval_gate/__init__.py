"""An approval gate and a JSONL audit sink for browserbay (an integrator example)."""
