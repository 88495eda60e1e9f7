"""Every command of README.md and docs/ runs as written on a fresh clone.

The shell blocks (```bash) of README.md and the docs' Markdown pages are split into commands
(line continuations joined, comments dropped, `&&` and `;` split) and each is checked by kind:

- `pip install ...`: every extra it names exists in pyproject.toml; nothing is installed.
- `python SCRIPT ...`: the script exists, `python SCRIPT --help` runs (its module-level imports
  and its argument parser) and knows every `--flag` the command passes; and the extras the
  page's `pip install` commands named before it (in the same block, or else anywhere on the
  page before the block) install every module the script and its local helpers import, except
  imports the script guards as optional (an `except ImportError` that goes on).
- `python -m pytest PATHS`: the paths exist (the suite itself is not run from inside itself).
- `bash .ci/X`: the CI step exists. `cd DIR`: the directory exists. `asv ...`: an extra the
  page names installs asv.

A command of another kind fails the test, so that a new one gets a check here. Commands written
inline in the prose (`python ...`, `bash ...`, `pip install ...`) get the same checks, up to a
page's dated history of measurements. Cheap commands
also run: the README's Python blocks, each in a fresh interpreter, their `print` lines checked
against the comment beside them, and the demo at small sizes. Every `pip install` of an extra
anywhere in the repository (README, docs, examples, benchmarks, gradcy, .ci) names an existing
extra. No network is used.
"""

import ast
import importlib.util
import re
import shlex
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10: pytest depends on tomli there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^(\s*)```(\w*)\s*$")
SHELL = {"bash", "sh", "shell", "console"}
INLINE = re.compile(r"`((?:[A-Z_]+=\S+ )?(?:python|bash|pip install) [^`]+)`")
EXTRA = re.compile(r"""(?:gradcy|\.)\[([A-Za-z0-9_,\- ]+)\]""")
# the module a script imports -> the distribution that installs it (requirements' names)
DISTRIBUTION = {
    "dask": "dask",
    "distributed": "distributed",
    "dask_glm": "dask-glm",
    "scipy": "scipy",
    "psutil": "psutil",
    "matplotlib": "matplotlib",
    "autograd": "autograd",
    "torch": "torch",
    "jax": "jax",
    "jaxlib": "jax",
    "cupy": "cupy",
    "asv": "asv",
    "pytest": "pytest",
    "hypothesis": "hypothesis",
}
ALWAYS = {"gradcy", "numpy"}  # installed by any `pip install` of gradcy
# peer libraries a script checks for with importlib.util.find_spec before importing them, and
# leaves out when they are not installed (the AST sees only unguarded imports there)
OPTIONAL = {"peer_workloads.py": {"autograd", "torch", "jax", "jaxlib"}}


def _pages():
    pages = [ROOT / "README.md"]
    pages += sorted(p for p in (ROOT / "docs").rglob("*.md") if "_build" not in p.parts)
    return [p for p in pages if p.exists()]


def _blocks(path):
    """[(language, first line number, text)] of the fenced blocks of a Markdown file."""
    out, lang, start, body = [], None, 0, []
    for n, line in enumerate(path.read_text().split("\n"), 1):
        m = FENCE.match(line)
        if lang is None and m and m.group(2):
            lang, start, body, indent = m.group(2), n + 1, [], len(m.group(1))
        elif lang is not None and m and not m.group(2):
            out.append((lang, start, "\n".join(body)))
            lang = None
        elif lang is not None:
            body.append(line[indent:])
    return out


def _commands(text):
    """The commands of a shell block: [list of words], comments dropped, `&&`/`;` split."""
    text = text.replace("\\\n", " ")
    commands = []
    for line in text.split("\n"):
        words = shlex.split(line, comments=True)
        current = []
        for w in words:
            if w in ("&&", ";", "||"):
                commands.append(current)
                current = []
            else:
                current.append(w)
        commands.append(current)
    return [c for c in commands if c]


def _shell_cases():
    cases = []
    for page in _pages():
        before = page.read_text().split("\n")
        for lang, line, text in _blocks(page):
            if lang in SHELL:
                page_extras = set()
                for prose in before[:line]:
                    if "pip install" in prose:
                        page_extras |= _extras_named(prose)
                rel = page.relative_to(ROOT).as_posix()
                cases.append(pytest.param(page, text, page_extras, id=f"{rel}:{line}"))
    return cases


@cache
def _extras():
    """{extra: set of requirement names}, gradcy's own extras expanded (gradcy[dask])."""
    table = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    raw = table.get("optional-dependencies", {})

    def names(extra, seen=()):
        out = set()
        for req in raw[extra]:
            name = re.match(r"[A-Za-z0-9_.\-]+", req).group(0).lower().replace("_", "-")
            if name == "gradcy":
                for inner in re.search(r"\[(.*?)\]", req).group(1).split(","):
                    if inner.strip() not in seen:
                        out |= names(inner.strip(), seen + (extra,))
            else:
                out.add(name)
        return out

    return {extra: names(extra) for extra in raw}


def _extras_named(text):
    return {e.strip() for m in EXTRA.finditer(text) for e in m.group(1).split(",")}


def _third_party_imports(path, seen=None):
    """(required, optional) top-level modules imported by the script and the local modules it
    imports (files beside it or in benchmarks/). An import is optional when it sits in a try
    whose ImportError handler neither exits nor raises."""
    seen = set() if seen is None else seen
    if path in seen:
        return set(), set()
    seen.add(path)
    tree = ast.parse(path.read_text())
    guarded = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try):
            for handler in node.handlers:
                caught = ast.unparse(handler.type) if handler.type else "BaseException"
                if not re.search(r"ImportError|ModuleNotFoundError|Exception", caught):
                    continue
                stops = any(
                    isinstance(n, ast.Raise)
                    or (
                        isinstance(n, ast.Call)
                        and ast.unparse(n.func) in ("sys.exit", "exit", "pytest.skip")
                    )
                    for n in ast.walk(handler)
                )
                if not stops:
                    for stmt in node.body:
                        guarded |= {id(n) for n in ast.walk(stmt)}
    required, optional = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            mods = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            mods = [node.module]
        else:
            continue
        for mod in mods:
            top = mod.split(".")[0]
            local = [d / f"{top}.py" for d in (path.parent, ROOT / "benchmarks")]
            local = [p for p in local if p.exists()]
            if local:
                r, o = _third_party_imports(local[0], seen)
                required |= r
                optional |= o
            elif top in sys.stdlib_module_names or top in ALWAYS:
                continue
            elif id(node) in guarded or top in OPTIONAL.get(path.name, ()):
                optional.add(top)
            else:
                required.add(top)
    return required, optional - required


@cache
def _help(script):
    proc = subprocess.run(
        [sys.executable, str(ROOT / script), "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, f"python {script} --help failed:\n{proc.stderr[-2000:]}"
    return proc.stdout


def _check_pip(words, where):
    for extra in _extras_named(" ".join(words)):
        assert extra in _extras(), (
            f"{where}: `{' '.join(words)}` names the extra [{extra}], "
            f"which pyproject.toml does not define"
        )
    for w in words[2:]:
        if not w.startswith("-") and "[" not in w and w not in (".", "gradcy"):
            if "/" in w:  # a local file: a built wheel (may not exist yet) or a path
                assert (ROOT / w.split("/")[0]).exists() or w.startswith("dist/"), where
            else:
                pytest.fail(
                    f"{where}: `{' '.join(words)}` installs {w!r} by name; name an "
                    f"extra of pyproject.toml instead"
                )


def _check_python(words, where, cwd, installed):
    if words[1:3] == ["-m", "pytest"]:
        for w in words[3:]:
            if not w.startswith("-"):
                assert (cwd / w.split("::")[0]).exists(), f"{where}: {w} does not exist"
        return
    script = words[1]
    assert script.endswith(".py") and (cwd / script).is_file(), (
        f"{where}: `{' '.join(words)}`: {script} is not a script of the repository"
    )
    text = _help((cwd / script).relative_to(ROOT).as_posix())
    source = (cwd / script).read_text()
    for w in words[2:]:
        if w.startswith("--"):
            flag = w.split("=")[0]
            # in the help, or a mode the script reads itself (peers.py --worker)
            known = (
                re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text) or f'"{flag}"' in source
            )
            assert known, f"{where}: `{' '.join(words)}`: python {script} --help knows no {flag}"
    if installed is None:
        return
    required, _ = _third_party_imports(cwd / script)
    provided = set().union(*(_extras()[e] for e in installed if e in _extras()))
    unknown = sorted(m for m in required if m not in DISTRIBUTION)
    assert not unknown, f"{script} imports {unknown}: add them to DISTRIBUTION above"
    missing = sorted(m for m in required if DISTRIBUTION[m] not in provided)
    assert not missing, (
        f"{where}: `{' '.join(words)}` needs {missing}, which the extras "
        f"installed before it ({sorted(installed)}) do not install"
    )


def _check_commands(text, where, page_extras):
    cwd = ROOT
    block_extras = set()
    for words in _commands(text):
        while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):
            words = words[1:]  # VAR=value prefixes
        tool = words[0]
        if tool == "pip":
            assert words[1] == "install", f"{where}: pip {words[1]}"
            _check_pip(words, where)
            block_extras |= _extras_named(" ".join(words))
        elif tool == "python" and words[1] in ("-c", "-X"):
            continue  # a one-liner: nothing of the tree to check
        elif tool == "python" and words[1] == "-m" and words[2] != "pytest":
            assert importlib.util.find_spec(words[2]) is not None, (
                f"{where}: `{' '.join(words)}`: no module {words[2]}"
            )
        elif tool == "python":
            installed = block_extras or page_extras or None
            _check_python(words, where, cwd, installed)
        elif tool == "bash":
            assert (cwd / words[1]).is_file(), f"{where}: {words[1]} does not exist"
        elif tool == "cd":
            cwd = cwd / words[1]
            assert cwd.is_dir(), f"{where}: cd {words[1]}: no such directory"
        elif tool == "asv":
            extras = block_extras | page_extras
            assert any("asv" in _extras().get(e, ()) for e in extras), (
                f"{where}: asv is used, but no extra named on the page installs it"
            )
        else:
            pytest.fail(f"{where}: `{' '.join(words)}`: no check for {tool!r} commands here")


@pytest.mark.parametrize("page,text,page_extras", _shell_cases())
def test_shell_block_commands(page, text, page_extras):
    _check_commands(text, page.relative_to(ROOT).as_posix(), page_extras)


def _inline_cases():
    """The commands written inline in the prose (`python ...`, `bash ...`, `pip install ...`),
    up to a page's dated history of measurements (what was run then, under the names of then)."""
    cases = []
    for page in _pages():
        text = page.read_text().split("## History of measurements")[0]
        for n, line in enumerate(text.split("\n"), 1):
            for m in INLINE.finditer(line):
                rel = page.relative_to(ROOT).as_posix()
                cases.append(pytest.param(m.group(1), f"{rel}:{n}", id=f"{rel}:{n}"))
    return cases


@pytest.mark.parametrize("command,where", _inline_cases())
def test_inline_commands(command, where):
    _check_commands(command, where, set())


# =============================================================================
# Extras named anywhere
# =============================================================================
def _repository_texts():
    paths = [ROOT / "README.md", *sorted((ROOT / ".ci").glob("*"))]
    for folder, pattern in (
        ("docs", "*.md"),
        ("docs", "*.rst"),
        ("examples", "*.py"),
        ("benchmarks", "*.py"),
        ("benchmarks", "*.md"),
        ("gradcy", "*.py"),
        ("tests", "*.py"),
    ):
        paths += sorted(p for p in (ROOT / folder).rglob(pattern) if "_build" not in p.parts)
    return [p for p in paths if p.is_file()]


def test_every_extra_named_in_a_pip_install_exists():
    named = {}
    for path in _repository_texts():
        for n, line in enumerate(path.read_text(errors="replace").split("\n"), 1):
            if "pip install" in line and path.name != "test_readme_commands.py":
                for extra in _extras_named(line):
                    named.setdefault(extra, f"{path.relative_to(ROOT)}:{n}")
    assert named, "no pip install of an extra found: the search is broken"
    missing = {e: where for e, where in named.items() if e not in _extras()}
    assert not missing, f"extras named but not defined in pyproject.toml: {missing}"


def test_the_checks_catch_what_they_are_for():
    """A missing extra, a missing import and an unknown flag are each reported."""
    with pytest.raises(AssertionError, match=r"\[nosuch\]"):
        _check_pip(["pip", "install", "-e", ".[nosuch]"], "here")
    with pytest.raises(AssertionError, match=r"needs \[.*'scipy'\]"):
        _check_python(["python", "examples/dask_logistic.py"], "here", ROOT, {"cupy"})
    with pytest.raises(AssertionError, match="knows no --nosuch"):
        _check_python(["python", "examples/demo.py", "--nosuch"], "here", ROOT, None)
    required, optional = _third_party_imports(ROOT / "examples" / "dask_logistic.py")
    assert {"dask", "distributed", "scipy", "psutil"} <= required
    assert "dask_glm" in optional


# =============================================================================
# The cheap ones, run
# =============================================================================
def _readme_python_blocks():
    return [
        pytest.param(text, id=f"README.md:{line}")
        for lang, line, text in _blocks(ROOT / "README.md")
        if lang == "python"
    ]


@pytest.mark.parametrize("code", _readme_python_blocks())
def test_readme_python_blocks_run(code, tmp_path):
    imports = {m.group(1) for m in re.finditer(r"^(?:import|from) (\w+)", code, re.M)}
    for module in sorted(imports - ALWAYS):
        pytest.importorskip(module)
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    # each print line's comment ends with what it prints
    expected = [
        line.split("#", 1)[1].strip()
        for line in code.split("\n")
        if line.lstrip().startswith("print(") and "#" in line
    ]
    printed = proc.stdout.strip().split("\n")
    assert len(printed) == len(expected), proc.stdout
    for got, comment in zip(printed, expected):
        assert comment.endswith(got.strip()), f"printed {got!r}, the README says {comment!r}"


def test_the_demo_runs_at_small_sizes(tmp_path):
    """`python examples/demo.py` end to end (training, the timed rounds, the PNG when
    matplotlib is there), at sizes that take seconds."""
    proc = subprocess.run(
        [
            sys.executable,
            "examples/demo.py",
            "--epochs",
            "12",
            "--D",
            "12",
            "--rounds",
            "2",
            "--out",
            str(tmp_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "Against the hand-written gradient: gradcy peaks at" in proc.stdout
    assert "GRADIENT DIFFERS" not in proc.stdout
