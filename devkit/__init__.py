"""Helpers shared by ``tests/`` and ``bench/``, outside the ``builder`` package (not in its
wheel): loopback servers (:mod:`devkit.servers`) and the memory bench's results table
(:mod:`devkit.captable`).  ``bench/`` and ``tests/`` import this package, never each other."""
