"""Every fuzz test ingests (and persists) anew: cached frames are released after each."""

import pytest
from conftest import release_cached_frames


@pytest.fixture(autouse=True)
def _release_cached_frames():
    """Every example ingests (and persists) anew: release after each test."""
    yield
    release_cached_frames()
