"""``python -m extension_cpp_testing census NAMESPACE``: see census.py."""

import sys

from .census import main

if __name__ == "__main__":
    if sys.argv[1:2] != ["census"]:
        sys.exit("usage: python -m extension_cpp_testing census NAMESPACE [--import M] [--spec F]")
    sys.exit(main(sys.argv[2:]))
