"""Sphinx configuration of gradcy's documentation: python -m sphinx -W -b html docs docs/_build/html
(.ci/docs). Pages are Markdown (MyST) or reStructuredText; the API reference is generated from
the docstrings of the installed gradcy, by public name (gradcy.grad, gradcy.extend.defvjp, ...).
The figures are drawn at build time from the benchmark code (_ext/gradcy_figures.py)."""

import os
import sys
from pathlib import Path

# one BLAS thread before NumPy is imported, as in the benchmarks: the figures time matrix
# products, which a thread pool makes slow and noisy on a busy machine
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import gradcy

sys.path.insert(0, str(Path(__file__).resolve().parent / "_ext"))

project = "gradcy"
author = "the gradcy developers"
copyright = "gradcy developers"
release = gradcy.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "numpydoc",
    "myst_parser",
    "sphinx_copybutton",
    "gradcy_figures",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "_generated", "_ext"]
root_doc = "index"

# numpydoc: class pages list their members with autodoc directives, not generated tables
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
autodoc_member_order = "bysource"
autodoc_typehints = "none"

myst_heading_anchors = 3

# furo: a maintained theme that ships its assets (no fonts or scripts from the internet, so the
# site works offline); custom.css widens the column to the project's 100-character lines
html_theme = "furo"
html_title = f"gradcy {release}"
html_static_path = ["_static"]
html_css_files = ["custom.css"]

# the copy button copies the commands, not the prompts or the outputs
copybutton_prompt_text = r">>> |\.\.\. |\$ "
copybutton_prompt_is_regexp = True
copybutton_only_copy_prompt_lines = True
