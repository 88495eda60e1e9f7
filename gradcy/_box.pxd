# Contract of gradcy/_box.pyx: the traced value (Box) and its registered subclasses.
#
# What this part owns, and where each owned reference is released:
# - Box._value, Box._tape: with the Box (Box.__dealloc__ tells the tape its node lost its Box,
#   Tape._box_dropped()). A Box holds its Tape; a Tape never holds its Boxes. Boxes are made by
#   _tape's make_box (a Box made any other way belongs to _tape._DETACHED, a released tape).
# - _box_type_of, _box_types (the registered Box subclasses), _box_factories, _type_names (the
#   names set_type_name gave static types): for the life of the process.
#
# Box and Tape refer to each other (a Box dispatches Primitives and tells its Tape when it is
# dropped; a Primitive records onto a Tape and returns a Box), so _box and _tape cimport each
# other (and _hooks, _write): the module body of each of them calls nothing of the others, so
# Python may import any of them first.
from gradcy._tape cimport Tape


cdef class Box:
    cdef readonly object _value    # the value the primitive produced (a
                                   # Box of an outer trace when nested)
    cdef readonly Tape _tape       # the tape that recorded it
    cdef readonly Py_ssize_t _node  # its node index in the tape's arena
    cdef object __weakref__        # an owned buffer's info refers to its Box weakly


# Box subclasses for value types of the user's own (Box.register): value type -> subclass, and
# each subclass -> itself; _n_box_subtypes counts them (0: an exact type check tells a Box);
# also an ndarray subclass registered with Box itself (autograd's ArrayBox.register(T)) -> Box,
# which marks T as accepted (gradcy._arguments.registered_type)
cdef dict _box_type_of
# value type -> a box factory written into Box.type_mappings (autograd's form): a
# differentiation calls factory(value, None, None) on each input of that type (a check that may
# raise) before tracing it; for the life of the process
cdef dict _box_factories
cdef Py_ssize_t _n_box_subtypes

# transfer_box(target, source): target becomes the Box of source's node and value (an in-place
# write gives the buffer a new version); source is left detached
cdef int _transfer_box(Box target, Box source) except -1
