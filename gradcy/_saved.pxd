# Contract of gradcy/_saved.pyx: the compact form of a saved record, which _tape's recording
# (and _recompute) asks for. What it returns belongs to the caller's record; its caches (the
# last ArrayMeta made, the 64 most recent ones and keyword dicts, all immutable) live for the
# process. It cimports Box (_box.pxd) and the array types (_hooks.pxd), which cimport _tape:
# its module body calls nothing of theirs.

# what a saved record holds for a value it does not keep: an ArrayMeta for a buffer (shared by
# values of one shape, dtype and type), the value itself for small Python objects (meta_of)
cdef object _meta_of(object v)
# an equal dict shared by the records of calls with the same small keyword arguments (ints,
# bools, strings, None; at most 4), or kwargs itself
cdef object _shared_kwargs(dict kwargs)
