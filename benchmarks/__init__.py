"""The benchmarks: python -m benchmarks (make bench; docs/performance.md)."""
