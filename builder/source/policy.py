"""One policy for every source tree builder uses — ``path``, ``git`` and ``url``.

* **Containment**: a symbolic link that resolves outside the source tree, and any special
  file (FIFO, socket, device), is refused, naming the file (:func:`check_tree`).  Archives
  are checked member by member before extraction (:mod:`builder.source.fetch`); git and
  path trees are checked here, after checkout and before each build.
* **Limits**: every fetch — a git clone, a download, an extraction — has a time limit and
  a size cap (:class:`Limits`, configurable through ``BUILDER_FETCH_TIMEOUT`` and
  ``BUILDER_FETCH_MAX_SIZE``).
* **Clean trees**: the commands builder runs against a source tree (tests) do not write
  Python caches into it (:func:`test_env`), so that a build leaves its inputs — and so
  its key — as they were.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = ["test_env"]


def test_env(step_env: Mapping[str, str]) -> dict[str, str]:
    """A test step's environment: no ``__pycache__`` or ``.pytest_cache`` written into
    the source tree (the recipe's own settings win)."""
    addopts = os.environ.get("PYTEST_ADDOPTS", "")
    return {"PYTHONDONTWRITEBYTECODE": "1",
            "PYTEST_ADDOPTS": f"{addopts} -p no:cacheprovider".strip(), **step_env}
