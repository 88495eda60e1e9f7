"""How many public functions gradcy differentiates, module by module, beside autograd 1.9.1.

    python benchmarks/operator_counts.py [--list] [--no-autograd]

A "differentiable public function" of a module is a public name of the module that is either

  * a registered primitive: a gradcy primitive that is traced and has both reverse-mode and
    forward-mode rules (a VJP and a JVP); for autograd, a name bound to a primitive with a
    registered VJP (autograd's own count: `defvjp`), or a thin wrapper of one (a Python
    function that calls a global primitive of the same name: autograd's mean, std, var, where,
    linalg.norm), or
  * a verified composite: a name that is not a registered primitive but is listed in
    COMPOSITES below and whose gradient check passes on that representative input, in reverse
    and forward mode (gradcy.test_util.check_grads / autograd.test_util.check_grads, order 1).
    COMPOSITES is the same table for both libraries (stack, concatenate, block, eig, svd...).

Names are counted once each (aliases such as acos/arccos count twice, as in both libraries'
namespaces). Two totals per module: every public name, and only the names that exist in the
reference module (numpy, numpy.linalg, numpy.fft, scipy.special, scipy.stats.<distribution>),
which leaves out internal primitives such as concatenate_args or getitem. scipy.stats counts
the functions of its distribution modules (norm.pdf, t.cdf, ...), not the scipy.special
functions those modules import.

The issue's figures for autograd 1.9.1 (numpy 119, numpy.linalg 10, numpy.fft 15,
scipy.special 30, scipy.stats 27) are printed beside the recomputed ones.
"""

import argparse
import importlib
import types
import warnings

import numpy as onp

REPORTED_AUTOGRAD = {
    "numpy": 119,
    "numpy.linalg": 10,
    "numpy.fft": 15,
    "scipy.special": 30,
    "scipy.stats": 27,
}
MODULES = ["numpy", "numpy.linalg", "numpy.fft", "scipy.special", "scipy.stats"]
STATS_DISTS = ["beta", "chi2", "dirichlet", "gamma", "multivariate_normal", "norm", "poisson", "t"]

_rs = onp.random.RandomState(0)
_A = _rs.randn(3, 3)
_SPD = _A @ _A.T + 3 * onp.eye(3)
_V = _rs.randn(3)


def _c(np, la):
    """The representative calls of COMPOSITES: name -> (function of the array, array)."""
    return {
        "numpy": {
            "array": (lambda x: np.array([x, 2.0 * x]), _V),
            "asarray": (lambda x: np.asarray(x) * 2.0, _V),
            "stack": (lambda x: np.stack([x, x * x], axis=1), _V),
            "hstack": (lambda x: np.hstack([x, x * x]), _V),
            "vstack": (lambda x: np.vstack([x, x * x]), _V),
            "row_stack": (lambda x: np.row_stack([x, x * x]), _V),
            "dstack": (lambda x: np.dstack([x, x * x]), _V),
            "column_stack": (lambda x: np.column_stack([x, x * x]), _V),
            "concatenate": (lambda x: np.concatenate([x, x * x]), _V),
            "concat": (lambda x: np.concat([x, x * x]), _V),
            "block": (lambda x: np.block([x, x * x]), _V),
            "choose": (lambda x: np.choose(onp.array([0, 1, 0]), [x, x * x]), _V),
            "select": (lambda x: np.select([_V > 0, _V <= 0], [x, x * x]), _V),
            "append": (lambda x: np.append(x, x * x), _V),
            "copy": (lambda x: np.copy(x) * x, _V),
            "full": (lambda x: np.full((2,), x[0]) * x[1], _V),
            "mean": (lambda x: np.mean(x * x), _V),
            "var": (lambda x: np.var(x), _V),
            "std": (lambda x: np.std(x), _V),
            "where": (lambda x: np.where(_V > 0, x, x * x), _V),
        },
        "numpy.linalg": {
            "cond": (lambda x: la.cond(x), _SPD),
            "cross": (lambda x: la.cross(x, x[::-1] * 2.0), _V),
            "diagonal": (lambda x: la.diagonal(x), _A),
            "eig": (lambda x: np.real(la.eig(x)[0]), _SPD),
            "eigh": (lambda x: la.eigh(x)[0], _SPD),
            "matmul": (lambda x: la.matmul(x, x), _A),
            "matrix_transpose": (lambda x: la.matrix_transpose(x) * x, _A),
            "multi_dot": (lambda x: la.multi_dot([x, x, x]), _A),
            "outer": (lambda x: la.outer(x, x), _V),
            "qr": (lambda x: la.qr(x)[1], _A),
            "slogdet": (lambda x: la.slogdet(x)[1], _SPD),
            "svd": (lambda x: la.svd(x)[1], _A),
            "tensordot": (lambda x: la.tensordot(x, x), _A),
            "trace": (lambda x: la.trace(x * x), _A),
            "vecdot": (lambda x: la.vecdot(x, x), _A),
            "norm": (lambda x: la.norm(x), _A),
        },
    }


def _public(module):
    return {
        n: o
        for n, o in vars(module).items()
        if not n.startswith("_") and callable(o) and not isinstance(o, (type, types.ModuleType))
    }


def _reference(name):
    """The public names of the reference module (None: not importable)."""
    try:
        if name.startswith("scipy.stats."):
            dist = getattr(importlib.import_module("scipy.stats"), name.rsplit(".", 1)[1])
            return {n for n in dir(dist) if not n.startswith("_")}
        return {n for n in dir(importlib.import_module(name)) if not n.startswith("_")}
    except ImportError:
        return None


def _verified(check, calls, names, skip):
    """The names of `calls` (in `names`, not in `skip`) whose gradient checks pass."""
    ok = set()
    for name, (fun, x) in calls.items():
        if name not in names or name in skip:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                check(fun, modes=["rev", "fwd"], order=1)(x)
            ok.add(name)
        except Exception:  # any failure means "not differentiable"
            pass
    return ok


# ---------------------------------------------------------------------------- gradcy
def _counts(mods, special_objs, calls, is_prim, check):
    """{module key: its differentiable public names}: the primitives (is_prim(name, obj)) and
    the compositions that `check` verifies (scipy.special's names left out of scipy.stats)."""
    out = {}
    for key, module in mods.items():
        names = _public(module)
        if key.startswith("scipy.stats."):
            names = {n: o for n, o in names.items() if id(o) not in special_objs}
        prims = {n for n, o in names.items() if is_prim(n, o)}
        comps = _verified(check, calls.get(key, {}), set(names), prims)
        out[key] = prims | comps
    return out


def gradcy_counts():
    import gradcy.numpy as gnp
    import gradcy.numpy.fft  # noqa: F401  (binds the submodule attribute gnp.fft)
    import gradcy.numpy.linalg as gla
    from gradcy._core import Primitive
    from gradcy.test_util import check_grads

    mods = {"numpy": gnp, "numpy.linalg": gla, "numpy.fft": gnp.fft}
    try:
        import gradcy.scipy.special as gsp
        import gradcy.scipy.stats as gst

        mods["scipy.special"] = gsp
        for d in STATS_DISTS:
            mods["scipy.stats." + d] = getattr(gst, d)
    except ImportError:
        gsp = None
    special_objs = {id(o) for o in vars(gsp).values()} if gsp is not None else set()

    def is_prim(name, o):
        return (
            isinstance(o, Primitive)
            and o.traced
            and (o.vjpmakers or o.vjp_argnums is not None)
            and (o.jvpmakers or o.jvp_argnums is not None)
        )

    return _counts(mods, special_objs, _c(gnp, gla), is_prim, check_grads)


# ---------------------------------------------------------------------------- autograd
def autograd_counts():
    warnings.simplefilter("ignore")
    import autograd.numpy as anp
    import autograd.numpy.fft  # noqa: F401  (binds the submodule attribute anp.fft)
    import autograd.numpy.linalg as ala
    import autograd.scipy.special as asp
    from autograd.core import primitive_vjps
    from autograd.test_util import check_grads

    registered = {id(f) for f in primitive_vjps}
    mods = {"numpy": anp, "numpy.linalg": ala, "numpy.fft": anp.fft, "scipy.special": asp}
    for d in STATS_DISTS:
        mods["scipy.stats." + d] = importlib.import_module("autograd.scipy.stats." + d)
    special_objs = {id(o) for o in vars(asp).values()}

    def is_registered(name, obj):
        if id(obj) in registered:
            return True
        code = getattr(obj, "__code__", None)
        glb = getattr(obj, "__globals__", {})
        for ref in code.co_names if code is not None else ():
            target = glb.get(ref)
            if id(target) in registered and getattr(target, "__name__", None) == name:
                return True  # a thin wrapper (mean, std, var, where, linalg.norm)
        return False

    def check(fun, modes, order):
        return check_grads(fun, modes=modes, order=order)

    return _counts(mods, special_objs, _c(anp, ala), is_registered, check)


# ---------------------------------------------------------------------------- report
def _by_module(counts):
    """Fold the scipy.stats.<dist> entries into one scipy.stats entry of 'dist.name's."""
    out = {}
    for key, names in counts.items():
        if key.startswith("scipy.stats."):
            d = key.rsplit(".", 1)[1]
            out.setdefault("scipy.stats", set()).update(f"{d}.{n}" for n in names)
        else:
            out[key] = set(names)
    return out


def _in_reference(key, names):
    if key == "scipy.stats":
        keep = set()
        for qual in names:
            d, n = qual.split(".", 1)
            ref = _reference("scipy.stats." + d)
            if ref is None or n in ref:
                keep.add(qual)
        return keep
    ref = _reference(key)
    return set(names) if ref is None else {n for n in names if n in ref}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--list", action="store_true", help="print the names too")
    parser.add_argument("--no-autograd", action="store_true", help="gradcy only")
    args = parser.parse_args(argv)

    g = _by_module(gradcy_counts())
    a = None
    if not args.no_autograd:
        try:
            a = _by_module(autograd_counts())
        except ImportError:
            a = None

    head = (
        f"{'module':<15} {'gradcy':>7} {'gradcy*':>8} {'autograd':>9} {'autograd*':>10} "
        f"{'autograd (issue)':>17}"
    )
    print(head)
    print("-" * len(head))
    totals = [0, 0, 0, 0, 0]
    for key in MODULES:
        gn = g.get(key, set())
        gr = _in_reference(key, gn)
        an = a.get(key, set()) if a is not None else set()
        ar = _in_reference(key, an) if a is not None else set()
        row = [len(gn), len(gr), len(an), len(ar), REPORTED_AUTOGRAD[key]]
        totals = [t + r for t, r in zip(totals, row)]
        acols = f"{len(an):>9} {len(ar):>10}" if a is not None else f"{'-':>9} {'-':>10}"
        print(f"{key:<15} {len(gn):>7} {len(gr):>8} {acols} {REPORTED_AUTOGRAD[key]:>17}")
    print("-" * len(head))
    acols = f"{totals[2]:>9} {totals[3]:>10}" if a is not None else f"{'-':>9} {'-':>10}"
    print(f"{'total':<15} {totals[0]:>7} {totals[1]:>8} {acols} {totals[4]:>17}")
    print("\n* only names that exist in the reference NumPy/SciPy module")
    if args.list:
        for key in MODULES:
            gn = g.get(key, set())
            print(f"\n[{key}] gradcy ({len(gn)}):\n  " + " ".join(sorted(gn)))
            if a is not None:
                an = a.get(key, set())
                print(f"  only in gradcy: {' '.join(sorted(gn - an)) or '-'}")
                print(f"  only in autograd: {' '.join(sorted(an - gn)) or '-'}")


if __name__ == "__main__":
    main()
