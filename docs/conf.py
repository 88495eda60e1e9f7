"""Sphinx configuration of gradcy's documentation: python -m sphinx -W -b html docs docs/_build/html
(.ci/docs). Pages are Markdown (MyST) or reStructuredText; the API reference is generated from
the docstrings of the installed gradcy, by public name (gradcy.grad, gradcy.extend.defvjp, ...)."""
import gradcy

project = "gradcy"
author = "the gradcy developers"
copyright = "gradcy developers"
release = gradcy.__version__
version = ".".join(release.split(".")[:2])

extensions = ["sphinx.ext.autodoc", "numpydoc", "myst_parser"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build"]
root_doc = "index"

# numpydoc: class pages list their members with autodoc directives, not generated tables
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
autodoc_member_order = "bysource"
autodoc_typehints = "none"

myst_heading_anchors = 3

# the default theme (alabaster) loads nothing from the internet: the site works offline
html_theme = "alabaster"
html_title = f"gradcy {release}"
html_static_path = []
html_theme_options = {"description": "Automatic differentiation of NumPy code",
                      "fixed_sidebar": True}

pygments_style = "sphinx"
