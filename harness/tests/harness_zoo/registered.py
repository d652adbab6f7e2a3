"""Importing it builds (or loads) the zoo and registers its ops: what a
finding's reproducer imports (OpSpec(imports=("harness_zoo.registered",)))."""

from . import zoo

zoo.load()
