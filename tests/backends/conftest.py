"""A real Dask cluster for the backend tests: two worker processes, one thread each."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # counters


@pytest.fixture(scope="session")
def dask_client():
    """A distributed.Client of a LocalCluster(n_workers=2, processes=True,
    threads_per_worker=1), closed at the end of the session."""
    distributed = pytest.importorskip("distributed", reason="distributed is not installed "
                                      "(pip install -e '.[dask]')")
    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                       dashboard_address=None, memory_limit="1GiB")
    client = distributed.Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()
