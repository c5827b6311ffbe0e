"""A small demo site bundled with browserbay: the embedded default for the README's first
command, the benchmarks and the tests. Served on 127.0.0.1 by the standard library."""
