"""Memory-aware compile scheduling.

* :mod:`.policy` — the admission decision, a pure function (and a simulator that
  predicts wall time and peak memory for ``builder plan``).
* :mod:`.estimate` — a job's predicted peak: build history, else the recipe's
  globs, else priors by umbrella header (``data/memory_priors.json``).
* :mod:`.broker` — a per-build server on a Unix socket that admits jobs.
* :mod:`.launcher` — ``CMAKE_<LANG>_COMPILER_LAUNCHER``: asks the broker before
  exec'ing the compiler, measures the peak of the whole process tree, retries an
  out-of-memory kill alone with the low-memory flag tier.
* :mod:`.cgroup` — the safety net: the build runs in a cgroup capped at the budget.
"""
