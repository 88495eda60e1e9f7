# Contract of gradcy/_cotangents.pyx: cotangent values other than plain arrays. A
# SparseCotangent owns its index and values (released with it); it lives in a node's cotangent
# slot (_tape.pxd: released by Tape._take_cotangent or Tape._free_all) or in a VJP's hands.

cdef class SparseCotangent:
    cdef readonly object index
    cdef readonly object values
    cdef readonly tuple shape
    cdef readonly object dtype
    cdef readonly bint advanced
    cpdef add_into(self, dense)
    cpdef dense(self)


cdef object _add_cotangents(object a, object b)   # a + b; containers elementwise; None is zero


# a SparseCotangent made dense; any other cotangent as given (inline: the sweep's results)
cdef inline object _densify(object c):
    return (<SparseCotangent>c).dense() if type(c) is SparseCotangent else c
