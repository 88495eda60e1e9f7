"""A real Dask cluster for the backend tests: two worker processes, one thread each."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # counters


_HERE = os.path.dirname(os.path.abspath(__file__))


def pytest_collection_modifyitems(session, config, items):
    """The backend tests run last: the session's cluster (its scheduler, nannies and the
    client's event loop thread, which allocate in the background) then exists only after
    every other test, so tests that measure this process's memory (tracemalloc) do not see
    it."""
    mine = [it for it in items if str(it.path).startswith(_HERE + os.sep)]
    if mine:
        others = [it for it in items if not str(it.path).startswith(_HERE + os.sep)]
        items[:] = others + mine


@pytest.fixture(scope="session")
def dask_client():
    """A distributed.Client of a LocalCluster(n_workers=2, processes=True,
    threads_per_worker=1), closed at the end of the session."""
    distributed = pytest.importorskip(
        "distributed", reason="distributed is not installed (pip install -e '.[dask]')"
    )
    cluster = distributed.LocalCluster(
        n_workers=2,
        processes=True,
        threads_per_worker=1,
        dashboard_address=None,
        memory_limit="1GiB",
    )
    client = distributed.Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()
