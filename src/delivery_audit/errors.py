"""The engine's errors, below every package that raises or catches them.

``InputError`` is raised by ingestion (ingest/) and by the adapters (adapters/) and caught
by the CLI; it lives here so that neither package imports the other for it.
"""

from __future__ import annotations

__all__ = ["InputError"]


class InputError(Exception):
    """An input that cannot be read at all: the run fails with a message naming it."""
