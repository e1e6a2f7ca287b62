"""Memory-aware compile scheduling.

* :mod:`.core` — the scheduler: a pure state machine, ``step(event, now) -> decisions``
  (admit, pause, resume, requeue), no threads, sockets or clock.
* :mod:`.tuning` — :class:`.tuning.Tuning`, every knob of the policy with its unit and why.
* :mod:`.policy`, :mod:`.admission`, :mod:`.guard`, :mod:`.backstop` — the pure decisions
  the core applies: each job's memory bound by its progress, which waiting jobs start, which
  running ones pause, what to freeze or requeue when the measured memory nears the budget.
* :mod:`.estimate`, :mod:`.jobs` — a job's predicted peak (history, the recipe's globs,
  priors by umbrella header) and what its siblings taught the build so far.
* :mod:`.broker` — the thin layer around the core: a Unix socket per build, the launchers'
  messages (:mod:`.wire`) and the build cgroup's memory turned into events.
* :mod:`.launcher` — ``CMAKE_<LANG>_COMPILER_LAUNCHER``: asks the broker before it runs
  the compiler, measures its process tree, obeys pause/resume/requeue, retries an
  out-of-memory kill alone with the low-memory flags.
* :mod:`.wrappers` — the ``cc``/``c++``/``nvcc`` scripts that put the launcher in front of
  a build tool's ``CC``/``CXX``, written and read back in one place.
* :mod:`.replay` — the core driven over recorded jobs on a virtual clock (bench, tests).
* :mod:`.forecast` — ``builder plan``'s prediction with the same admission and tuning.
* :mod:`.cgroup` — the safety net: the build runs in a cgroup capped at the budget.
"""
