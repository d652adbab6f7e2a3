"""Mutation testing: python -m tools.mutate (make mutate; docs/hardening.md)."""
