"""Every fuzz test ingests (and persists) anew: cached frames are released after each. The
property tests run at volume: marked ``audit`` (not in make test-fast)."""

import pytest
from conftest import release_cached_frames


@pytest.fixture(autouse=True)
def _release_cached_frames():
    """Every example ingests (and persists) anew: release after each test."""
    yield
    release_cached_frames()


def pytest_collection_modifyitems(items):
    for item in items:
        if "/fuzz/" in str(item.path):
            item.add_marker(pytest.mark.audit)
