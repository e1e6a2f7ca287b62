from __future__ import annotations

import shutil

import pytest

pytestmark = pytest.mark.functional


def need(*tools: str) -> None:
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} on PATH (CI installs it)")
