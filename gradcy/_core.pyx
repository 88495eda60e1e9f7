"""gradcy._core: the module the Python layer imports. It re-exports the Python API of the
engine's parts, each a .pyx (implementation) with a .pxd (contract, lifetimes):

- gradcy._tape: the tape (arena of nodes, backward sweep, release), Primitive (dispatch and
  recording), the active differentiation of each thread;
- gradcy._rules: a primitive's reverse-mode rule in the one form the sweep calls (VJP);
- gradcy._recompute: recomputed outputs (Recomputed, set_recompute_default);
- gradcy._fuse: record-time rewrites of written-out idioms (register_idioms, set_fusion);
- gradcy._saved: the compact form of a saved record (meta_of);
- gradcy._box: Box (the traced value) and the front end's helpers on Boxes;
- gradcy._hooks: the tables and hooks the operator layer fills (Box methods, NumPy overrides,
  array types, install_hooks);
- gradcy._write: writes into owned buffers (the core's own in-place write, setitem_fast) and
  what the in-place write path asks about a tape;
- gradcy._errors: the errors;
- gradcy._counters: process-wide counters (stats, reset_peak);
- gradcy._hold: the hold table of a tape (no Python API);
- gradcy._meta: ArrayMeta;
- gradcy._cotangents: SparseCotangent;
- gradcy._regions: regions of buffers, root buffers, basic indices, OwnedBuffer;
- gradcy._fast: grad's fast path (grad_fast).
"""
# re-exports: these names are gradcy._core's API, so each line is marked
# no-cython-lint (cython-lint reports them as imported but unused)
from gradcy._errors import (EscapedValueError, MissingVJPError,  # no-cython-lint
                            TracerArrayConversionError, MissingJVPError)  # no-cython-lint
from gradcy._counters import stats, reset_peak  # no-cython-lint
from gradcy._meta import ArrayMeta  # no-cython-lint
from gradcy._cotangents import SparseCotangent  # no-cython-lint
from gradcy._regions import (OwnedBuffer, root_buffer, is_basic_index, layout_region,  # no-cython-lint
                             region_hull, regions_overlap)  # no-cython-lint
from gradcy._tape import (
    Primitive, Tape,  # no-cython-lint
    _active, push_active, pop_active, active_tape,  # no-cython-lint
    unbroadcast)  # no-cython-lint
from gradcy._saved import meta_of  # no-cython-lint
from gradcy._recompute import set_recompute_default, Recomputed  # no-cython-lint
from gradcy._fuse import register_idioms, set_fusion  # no-cython-lint
from gradcy._box import Box, transfer_box, is_box, box_value  # no-cython-lint
from gradcy._hooks import (register_box_method, register_numpy_override,  # no-cython-lint
                           install_hooks, register_array_type, is_array_value)  # no-cython-lint
from gradcy._fast import SCALAR_SEEDS, grad_fast  # no-cython-lint
from gradcy._write import write_into, untracked_sharers, view_index, setitem_fast  # no-cython-lint
