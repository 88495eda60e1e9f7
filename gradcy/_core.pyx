"""gradcy._core: the module the Python layer imports. It re-exports the Python API of the
engine's parts, each a .pyx (implementation) with a .pxd (contract, lifetimes):

- gradcy._tape: the tape (arena of nodes, backward sweep, release), Primitive (dispatch and
  recording), Box (the traced value), the active differentiation of each thread, the errors,
  the registries and hooks the operator layer fills, the core's own in-place write;
- gradcy._counters: process-wide counters (stats, reset_peak);
- gradcy._hold: the hold table of a tape (no Python API);
- gradcy._meta: ArrayMeta;
- gradcy._cotangents: SparseCotangent;
- gradcy._regions: regions of buffers, root buffers, basic indices, OwnedBuffer;
- gradcy._fast: grad's fast path (grad_fast);
- gradcy._write: what the in-place write path asks about a tape.
"""
# re-exports: these names are gradcy._core's API, so each line is marked
# no-cython-lint (cython-lint reports them as imported but unused)
from gradcy._counters import stats, reset_peak  # no-cython-lint
from gradcy._meta import ArrayMeta  # no-cython-lint
from gradcy._cotangents import SparseCotangent  # no-cython-lint
from gradcy._regions import (OwnedBuffer, root_buffer, is_basic_index, layout_region,  # no-cython-lint
                             region_hull, regions_overlap)  # no-cython-lint
from gradcy._tape import (
    EscapedValueError, MissingVJPError, TracerArrayConversionError, MissingJVPError,  # no-cython-lint
    Primitive, Tape, Box,  # no-cython-lint
    _active, push_active, pop_active, active_tape,  # no-cython-lint
    register_box_method, register_numpy_override,  # no-cython-lint
    install_hooks, meta_of, set_recompute_default, Recomputed, register_array_type,  # no-cython-lint
    is_array_value,  # no-cython-lint
    unbroadcast, transfer_box, is_box, box_value, setitem_fast)  # no-cython-lint
from gradcy._fast import SCALAR_SEEDS, grad_fast  # no-cython-lint
from gradcy._write import write_into, untracked_sharers, view_index  # no-cython-lint
