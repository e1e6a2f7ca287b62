"""Memory-aware compile scheduling.

* :mod:`.policy` — pure functions: admission (each running job's memory bounded by its
  progress in CPU time, counted until its predicted end), the guard that pauses young
  jobs when an old one runs late, and a simulator that predicts wall time and peak
  memory for ``builder plan``.
* :mod:`.estimate` — a job's predicted peak (and, when measured, CPU time): build
  history, else the recipe's globs, else priors by umbrella header
  (``data/memory_priors.json``, which also holds the time model's values).
* :mod:`.history` — measured peaks, wall and CPU seconds between builds.
* :mod:`.broker` — a per-build server on a Unix socket that admits, pauses and resumes.
* :mod:`.launcher` — ``CMAKE_<LANG>_COMPILER_LAUNCHER``: asks the broker before
  exec'ing the compiler, reports and measures the peak RSS and CPU time of the whole
  process tree, stops/continues it on the broker's word, retries an out-of-memory kill
  alone with the low-memory flag tier.
* :mod:`.cgroup` — the safety net: the build runs in a cgroup capped at the budget.
"""
