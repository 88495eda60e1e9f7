# Contract of gradcy/_fast.pyx: grad's fast path. Owns one Tape per grad_fast call, released
# by that call's `finally` before it returns (also when the function raises).

# the gradient g in x's type, dtype and shape: the common cases here, `match` for the rest
cdef object _match_fast(object g, object x, object match)
