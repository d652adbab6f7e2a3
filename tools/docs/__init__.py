"""The docs' page generators: the Sphinx extension that writes the tutorial
pages, op schemas and results tables at build time (generate.py), and the
renderer of a run's raw results as the stamped pages of docs/results/
(render_results.py). docs/ itself holds only pages."""
