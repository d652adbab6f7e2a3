"""The tutorial's tests: its checkpoints, READMEs and side paths (make tutorial)."""
