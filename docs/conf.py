"""Sphinx configuration for the extension_cpp documentation.

Built by `make docs` with warnings as errors (-W --keep-going) and nitpicky
cross-references (-n). The tutorial pages are generated at build time by
tools/docs/generate.py from tutorial/, and the results pages from the stamped
Markdown in docs/results/ (docs/results/README.md), never pasted. The build
prints the site's word count.
"""

import os
import sys
from datetime import date

DOCS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(DOCS))  # the repository: tools.docs.generate

project = "extension_cpp"
author = "the extension_cpp authors"
copyright = f"{date.today().year}, {author}"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.doctest",
    "tools.docs.generate",  # tutorial pages, op schemas, results tables
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
# results/ and _generated/fragments/ hold pieces that pages include; they are
# not pages of their own.
exclude_patterns = ["_build", "results", "_generated/fragments"]

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

html_theme = "furo"
html_title = "extension_cpp"
html_static_path = ["_static"]
html_css_files = ["wrap.css"]

# Types in the signature: as "description" they became a second "Parameters"
# list after the docstring's own, since a paragraph splits the field list.
autodoc_typehints = "signature"
autodoc_member_order = "bysource"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
# "layouts, dtypes, devices: what to run on" stays one entry: as :param:
# fields, napoleon would repeat the description under each name.
napoleon_use_param = False

# torch's and the standard library's objects: the build runs offline, so
# there is no intersphinx inventory for them. These are the only targets allowed to stay unresolved.
nitpick_ignore = [
    ("py:class", "torch.Tensor"),
    ("py:class", "Tensor"),
    ("py:class", "torch.dtype"),
    ("py:class", "collections.abc.Sequence"),
    ("py:class", "collections.abc.Iterable"),
]

doctest_global_setup = """
import torch
import extension_cpp
"""

# Where the tutorial checkpoints live: the repository's tutorial/ folder, or
# TUTORIAL_DIR to render another checkout.
tutorial_dir = os.environ.get("TUTORIAL_DIR", os.path.join(DOCS, os.pardir, "tutorial"))
