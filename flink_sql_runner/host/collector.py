"""Python's cyclic garbage collector, paused while a command reads and decides.

A command that loads jobs makes millions of objects that all live to its end (the jobs, the
store's manifests, the facts, the plan), and every full collection walks them all for nothing:
at 10,000 jobs, `plan` spent about a quarter of its CPU (a second) in collections and what they
cost after; its peak memory is the same without them. So the collector is paused from the first
read (`pause`, by `cli/inputs.load`) until the plan is made: a command that ends there never
collects; `deploy` resumes it (`resume`) before it acts, with everything made so far frozen
(`gc.freeze`: never walked again), since it then waits on runs for minutes. At each command's
end (`restore`, in `cli/boundary.py`) the collector is as it was before the command: the same
process may run another (the tests do). Reference counting frees all the rest as always.
"""

from __future__ import annotations

import gc

_paused = False  # paused by `pause`, not resumed yet
_frozen = False  # `resume` froze what was made before it


def pause() -> None:
    global _paused
    if not _paused and gc.isenabled():
        gc.disable()
        _paused = True


def resume() -> None:
    global _paused, _frozen
    if _paused:
        gc.freeze()
        _frozen = True
        gc.enable()
        _paused = False


def restore() -> None:
    global _paused, _frozen
    if _frozen:
        gc.unfreeze()
        _frozen = False
    if _paused:
        gc.enable()
        _paused = False
