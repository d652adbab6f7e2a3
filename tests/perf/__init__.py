"""Benchmarks of the ops against PyTorch (see test_bench.py)."""
