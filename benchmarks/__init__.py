"""Benchmarks for Palimpsest. Run ``python -m benchmarks.locomo --help``."""
