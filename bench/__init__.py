"""Benchmarks (not tests): offline preview time against xpk, and the critical path of `pulumi up`."""
