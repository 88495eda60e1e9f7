"""gradcy has every module path and public name of autograd 1.9.1 (the version the test extra
installs), found by walking autograd's package, with compatible signatures.

A public name is a name in an autograd module's namespace that does not start with "_",
except: modules imported under another name (`np`, `anp`, `warnings`), objects of the
standard library (`partial`, `reduce`, ...), and names bound only as the target of a
module-level for loop (leftovers such as `type_` or `method_name`).
"""

import ast
import importlib
import inspect
import pkgutil
import sys
import types

import pytest

autograd = pytest.importorskip("autograd")

SOURCE, TARGET = "autograd", "gradcy"


def _modules():
    return [SOURCE] + sorted(m.name for m in pkgutil.walk_packages(autograd.__path__, SOURCE + "."))


def _loop_leftovers(module):
    """Names bound at module level only as for-loop targets."""
    try:
        tree = ast.parse(inspect.getsource(module))
    except (OSError, TypeError):
        return set()
    loop, other = set(), set()

    def targets(node, into):
        for n in ast.walk(node):
            if isinstance(n, ast.Name):
                into.add(n.id)

    for stmt in tree.body:
        if isinstance(stmt, ast.For):
            targets(stmt.target, loop)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            for t in getattr(stmt, "targets", [getattr(stmt, "target", None)]):
                targets(t, other)
        elif isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
            other.add(stmt.name)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            other.update((a.asname or a.name).split(".")[0] for a in stmt.names)
    return loop - other


def public_names(module):
    """name -> object of the public names of an autograd module."""
    leftovers = _loop_leftovers(module)
    out = {}
    for name in dir(module):
        if name.startswith("_") or name in leftovers:
            continue
        try:
            value = getattr(module, name)
        except AttributeError:  # numpy names that dir() lists but getattr refuses
            continue
        if isinstance(value, types.ModuleType):
            if value.__name__ != f"{module.__name__}.{name}":
                continue  # an import alias (np, anp, warnings)
        elif (getattr(value, "__module__", None) or "").split(".")[0] in sys.stdlib_module_names:
            continue
        out[name] = value
    return out


def _target(modname):
    return TARGET + modname[len(SOURCE) :]


MODULES = _modules()


def test_module_list_is_autograds():
    # the walk found autograd's modules (a broken walk must not pass vacuously)
    for m in [
        "autograd.core",
        "autograd.tracer",
        "autograd.wrap_util",
        "autograd.util",
        "autograd.numpy.numpy_boxes",
        "autograd.misc.tracers",
        "autograd.scipy.stats.dirichlet",
        "autograd.test_util",
    ]:
        assert m in MODULES
    assert len(MODULES) == 37


@pytest.mark.parametrize("modname", MODULES)
def test_module_exists(modname):
    importlib.import_module(_target(modname))


@pytest.mark.parametrize("modname", MODULES)
def test_public_names(modname):
    ours = importlib.import_module(_target(modname))
    theirs = public_names(importlib.import_module(modname))
    assert theirs, modname
    missing = sorted(n for n in theirs if not hasattr(ours, n))
    assert not missing, f"{_target(modname)} lacks autograd's names {missing}"
    for name, value in theirs.items():
        mine = getattr(ours, name)
        if isinstance(value, types.ModuleType):
            assert isinstance(mine, types.ModuleType), f"{_target(modname)}.{name}"
            assert mine.__name__ == _target(value.__name__), f"{_target(modname)}.{name}"
        elif isinstance(value, type):
            assert isinstance(mine, type), f"{_target(modname)}.{name} is not a class"
        elif callable(value):
            assert callable(mine), f"{_target(modname)}.{name} is not callable"


def _effective_params(fun):
    """The parameters a caller passes to autograd's `fun`: for an operator made by
    unary_to_nary, (fun, argnum) followed by the unary operator's own parameters after x."""
    closure = dict(zip(fun.__code__.co_freevars, [c.cell_contents for c in fun.__closure__ or ()]))
    unary = closure.get("unary_operator")
    if fun.__name__ != "nary_operator" and unary is not None:
        params = list(inspect.signature(unary).parameters.values())
        head = list(inspect.signature(fun).parameters.values())[:2]
        return head + params[2:]
    return list(inspect.signature(fun).parameters.values())


def _generic(params):
    return all(
        p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.name == "called_by_autograd_dispatcher"
        for p in params
    )


def _accepts(mine, theirs):
    """Every call that binds to autograd's parameters binds to ours: each positional parameter
    has the same name at the same position, keyword parameters exist (or **kwargs)."""
    ours = list(inspect.signature(mine).parameters.values())
    var_kw = any(p.kind is p.VAR_KEYWORD for p in ours)
    var_pos = any(p.kind is p.VAR_POSITIONAL for p in ours)
    names = {p.name: p for p in ours}
    positional = [p for p in ours if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    problems = []
    for i, p in enumerate(theirs):
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            if i < len(positional):
                # an optional parameter is often passed by name (argnum=, modes=, order=)
                if positional[i].name != p.name and p.default is not p.empty:
                    problems.append(
                        f"parameter {i} is {positional[i].name!r}, autograd's {p.name!r}"
                    )
            elif not var_pos:
                problems.append(f"no positional parameter {i} ({p.name!r})")
        elif p.name not in names and not var_kw:
            problems.append(f"no keyword parameter {p.name!r}")
    return problems


def _signature_cases():
    cases = []
    for modname in MODULES:
        theirs = public_names(importlib.import_module(modname))
        for name, value in theirs.items():
            if inspect.isfunction(value):
                cases.append((modname, name))
    return cases


@pytest.mark.parametrize("modname,name", _signature_cases())
def test_signatures(modname, name):
    value = getattr(importlib.import_module(modname), name)
    mine = getattr(importlib.import_module(_target(modname)), name)
    params = _effective_params(value)
    if _generic(params):
        return  # autograd's primitive wrapper: (*args, **kwargs)
    try:
        inspect.signature(mine)
    except (TypeError, ValueError):
        pytest.fail(f"{_target(modname)}.{name} has no inspectable signature")
    problems = _accepts(mine, params)
    assert not problems, (
        f"{_target(modname)}.{name}{inspect.signature(mine)} vs autograd's "
        f"{[str(p) for p in params]}: {problems}"
    )


def test_alias_resolves_every_module_to_gradcys():
    """tests/autograd_alias maps autograd.X to the gradcy.X module object (checked in a fresh
    interpreter: this one has the real autograd loaded)."""
    import os
    import subprocess

    here = os.path.dirname(os.path.abspath(__file__))
    code = (
        "import sys, importlib, autograd_alias\n"
        "autograd_alias.install()\n"
        f"mods = {MODULES!r}\n"
        "for m in mods:\n"
        "    a = importlib.import_module(m)\n"
        "    g = importlib.import_module('gradcy' + m[len('autograd'):])\n"
        "    assert a is g, m\n"
        "    assert g.__spec__.name == g.__name__, m\n"
        "import autograd.numpy as np\n"
        "from autograd import grad\n"
        "assert grad(lambda x: np.sum(np.sin(x)))(1.0) == np.cos(1.0)\n"
        "autograd_alias.check_no_real_autograd()\n"
        "print('ok', len(mods))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=here),
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["ok", str(len(MODULES))]
    # installing after the real autograd was imported is refused
    late = subprocess.run(
        [sys.executable, "-c", "import autograd, autograd_alias"],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=here),
        timeout=300,
    )
    assert late.returncode != 0 and "already imported" in late.stderr


def test_star_imports_bind_the_public_names_only():
    """`from gradcy import *` binds the operators and leaves Python's builtins alone (gradcy.tuple
    and friends stay attributes, as autograd's); `from gradcy.numpy import *` binds NumPy's
    public names and gradcy's submodules, none of the rule files' helpers."""
    import builtins

    import numpy

    import gradcy
    import gradcy.numpy

    ns = {}
    exec("from gradcy import *", ns)
    assert "grad" in ns and "hessian" in ns
    assert not {"tuple", "list", "dict", "isinstance", "type"} & set(ns)
    assert gradcy.tuple is not builtins.tuple  # still there for autograd's users
    ns = {}
    exec("from gradcy.numpy import *", ns)
    assert {"sin", "sum", "linalg", "fft", "random"} <= set(ns)
    extra = set(gradcy.numpy.__all__) - set(numpy.__all__)
    assert extra == {"at"}, extra
