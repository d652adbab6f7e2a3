"""Checks of what the kernels compile to and allocate (the timing is benchmarks/)."""
