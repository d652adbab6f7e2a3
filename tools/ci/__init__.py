"""CI and release checks (the wheels and the matrix are noxfile.py's)."""
