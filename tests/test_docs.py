"""The documentation's examples run, and every public name is documented with one.

- Each page of docs/ (Markdown and reStructuredText) runs as one doctest: its `>>>` examples
  in order, in one namespace, with the outputs shown on the page.
- The docstrings of the documented modules and of their public names (their __all__) run
  their examples; every public name must have one, in its docstring (a numpydoc Examples
  section) or, for names whose docstrings live in files other engineers own, right under its
  entry in the API reference.
- Every public name has an entry (an autodoc directive) in the API reference, docs/api/.
"""

import doctest
import importlib
import importlib.util
import re
import types
from pathlib import Path

import pytest


DOCS = Path(__file__).resolve().parents[1] / "docs"
DOCUMENTED_MODULES = [
    "gradcy",
    "gradcy.extend",
    "gradcy.memory",
    "gradcy.misc",
    "gradcy.misc.optimizers",
    "gradcy.test_util",
    "gradcy.builtins",
]
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
FENCE = re.compile(r"^\s*(```|~~~)")
DIRECTIVE = re.compile(r"^\.\. (auto\w+|currentmodule|py:\w+)::\s*([\w.]+)")


def _pages():
    return sorted(
        p
        for p in DOCS.rglob("*")
        if p.suffix in (".md", ".rst") and "_build" not in p.relative_to(DOCS).parts
    )


def _page_text(path):
    """The page's text for doctest: Markdown code fences become blank lines, so an
    example's expected output ends where its code block does (line numbers are kept)."""
    text = path.read_text()
    if path.suffix == ".md":
        text = "\n".join("" if FENCE.match(line) else line for line in text.split("\n"))
    return text


def _run(test):
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    failures = []
    runner.run(test, out=failures.append)
    assert runner.failures == 0, "".join(failures)
    return runner


def test_the_pages_exist():
    names = {p.relative_to(DOCS).as_posix() for p in _pages()}
    for page in [
        "index.md",
        "tutorial.md",
        "coming-from-autograd.md",
        "coming-from-pytorch.md",
        "coming-from-jax.md",
        "benchmarks.md",
        "changelog.md",
        "api/index.rst",
    ]:
        assert page in names


@pytest.mark.parametrize("page", [p.relative_to(DOCS).as_posix() for p in _pages()])
def test_page_examples_run(page):
    path = DOCS / page
    test = doctest.DocTestParser().get_doctest(
        _page_text(path), {"__name__": "__docs__"}, page, str(path), 0
    )
    _run(test)


# =============================================================================
# Public names: an entry in the API reference and a runnable example
# =============================================================================
def _public():
    """{id: (public path, object)} of the public functions and classes of the documented
    modules (each object once, under the first path found; submodules are not names)."""
    out = {}
    for modname in DOCUMENTED_MODULES:
        mod = importlib.import_module(modname)
        for name in mod.__all__:
            obj = getattr(mod, name)
            if isinstance(obj, types.ModuleType):
                continue
            out.setdefault(id(obj), (f"{modname}.{name}", obj))
    return out


PUBLIC = _public()


def _reference_entries():
    """{id of the object: the text of its entry} for every autodoc directive of docs/api/:
    the entry is the directive's line and its indented content."""
    entries = {}
    for path in sorted((DOCS / "api").glob("*.rst")):
        current = None
        lines = path.read_text().split("\n")
        for i, line in enumerate(lines):
            m = DIRECTIVE.match(line)
            if not m:
                continue
            kind, target = m.groups()
            if kind == "currentmodule":
                current = target
                continue
            if not kind.startswith("auto") or kind == "automodule":
                continue
            modname, _, name = target.rpartition(".") if "." in target else (current, None, target)
            obj = getattr(importlib.import_module(modname), name)
            body = [line]
            for following in lines[i + 1 :]:
                if following and not following[0].isspace():
                    break
                body.append(following)
            entries[id(obj)] = entries.get(id(obj), "") + "\n".join(body)
    return entries


ENTRIES = _reference_entries()


def test_every_public_name_has_a_reference_entry():
    missing = sorted(path for key, (path, _) in PUBLIC.items() if key not in ENTRIES)
    assert not missing, f"public names without an entry in docs/api/*.rst: {missing}"


def test_every_public_name_has_an_example():
    missing = []
    for key, (path, obj) in PUBLIC.items():
        doc = getattr(obj, "__doc__", None) or ""
        in_docstring = "Examples\n" in doc and ">>>" in doc
        if not in_docstring and ">>>" not in ENTRIES.get(key, ""):
            missing.append(path)
    assert not missing, f"public names without an example: {sorted(missing)}"


@pytest.mark.parametrize(
    "path,obj",
    sorted(PUBLIC.values(), key=lambda po: po[0]),
    ids=sorted(path for path, _ in PUBLIC.values()),
)
def test_docstring_examples_run(path, obj):
    tests = [
        t
        for t in doctest.DocTestFinder(recurse=True).find(
            obj, path, module=False, globs={"__name__": "__docs__"}
        )
        if t.examples
    ]
    if not tests:
        pytest.skip(f"{path}: its examples are on its API reference page (run above)")
    for test in tests:
        _run(test)


@pytest.mark.parametrize("modname", DOCUMENTED_MODULES)
def test_module_docstring_examples_run(modname):
    mod = importlib.import_module(modname)
    for test in doctest.DocTestFinder(recurse=False).find(
        mod, modname, globs={"__name__": "__docs__"}
    ):
        _run(test)


def test_a_wrong_example_fails():
    """The runner reports a wrong output (the tests above can fail)."""
    test = doctest.DocTestParser().get_doctest(">>> 1 + 1\n3\n", {}, "wrong", None, 0)
    with pytest.raises(AssertionError, match=r"Expected:\s+3\s+Got:\s+2"):
        _run(test)


def test_every_figure_a_page_shows_is_drawn_by_the_build():
    """The pages' figures (_generated/NAME.png) are drawn at build time by
    docs/_ext/gradcy_figures.py, never committed: each one a page names is one it draws."""
    spec = importlib.util.spec_from_file_location(
        "gradcy_figures", DOCS / "_ext" / "gradcy_figures.py"
    )
    figures = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(figures)
    shown = {
        m.group(1) for p in _pages() for m in re.finditer(r"_generated/([\w.-]+)", p.read_text())
    }
    assert shown, "no page shows a generated figure"
    assert shown <= set(figures.FIGURES), sorted(shown - set(figures.FIGURES))
