# Contract of gradcy/_hooks.pyx: what the operator layer installs into the engine. C globals,
# read by the parts that cimport them (_tape, _box, _write) through a pointer; written only by
# this module's register_* functions and install_hooks. Every table and hook holds its entries
# for the life of the process (an uninstalled hook is None).
#
# This part cimports Primitive (_primitive.pxd) and Box (_box.pxd) only to check the types of what
# is installed (and tell an array value from a Box); its import runs nothing of theirs.

cdef dict _EMPTY                # the kwargs of a call that had none (never mutated)
cdef dict _box_methods          # name -> callable(box, *args, **kw): Box operators and methods
cdef dict _ufunc_map            # numpy ufunc -> gradcy function (Box.__array_ufunc__)
cdef dict _function_map         # numpy function -> gradcy function (Box.__array_function__)

# array types of other libraries (dask, cupy): type -> bool, filled on first sight of a type;
# _any_array_types: some type was True (until then no value needs the lookup)
cdef dict _array_types
cdef bint _any_array_types
cdef bint _is_array_type(object t) except -1     # instances of t are array values of their own

# the hooks (install_hooks' docstring says what each does); None until installed
cdef object _out_hook            # out(prim, args, kwargs): a call with an `out` argument
cdef object _getitem_primitive   # the Primitive of x[idx] for a traced ndarray
cdef object _list_arg_hook       # list_arg(prim, args) -> new args or None
cdef object _tangent_fixer       # tangent_fixer(t, ans) -> t as ans's shape and dtype
cdef object _unbroadcast_slow    # unbroadcast(g, target): the general reduce and cast
cdef object _write_primitive     # the write Primitive (gradcy.numpy.setitem)
cdef object _before_write        # before_write(tape, info, region)
cdef object _after_write         # after_write(tape, info, region)

# Box.<name>'s implementation (registered with register_box_method); TypeError if none is
cdef object _method(str name)
