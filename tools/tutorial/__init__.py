"""The tutorial's tooling: the walk (walk.py, what `make tutorial` runs), the
checks each checkpoint runs (checks.py), the stage x check matrix they must
give (matrix.py), the build cache (buildcache.py) and the READMEs' diff blocks
(readme_diff.py). tutorial/ itself holds only what readers copy."""
