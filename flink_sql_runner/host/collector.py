"""Python's cyclic garbage collector: paused while a command reads and decides, kept off `watch`'s
state between its looks.

A command that loads jobs makes millions of objects that all live to its end (the jobs, the
store's manifests, the facts, the plan), and every full collection walks them all for nothing:
at 10,000 jobs, `plan` spent about a quarter of its CPU (a second) in collections and what they
cost after; its peak memory is the same without them. So the collector is paused from the first
read (`pause`, by `cli/inputs.load`) until the plan is made: a command that ends there never
collects; `deploy` resumes it (`resume`) before it acts, with everything made so far frozen
(`gc.freeze`: never walked again), since it then waits on runs for minutes. At each command's
end (`restore`, in `cli/boundary.py`) the collector is as it was before the command: the same
process may run another (the tests do). Reference counting frees all the rest as always.

`watch` runs for days and keeps its state between looks (each job's manifest, record, beacon
and stall watch), which every full collection walks again: at 10,000 unchanged jobs, one to
three of them a look added 0.2 to 0.6 s to a look of 0.5 s.
Between looks it freezes what the look left (`Frozen.between`), so that the next look's
collections walk only what that look makes; every `FULL_EVERY` seconds it first unfreezes and
walks everything once, so that reference cycles among what was frozen (the only garbage
reference counting leaves) are freed within that time. Its end unfreezes (`Frozen.end`).
"""

from __future__ import annotations

import gc

#: Seconds between two full collections of a process that freezes between steps (`Frozen`).
FULL_EVERY = 600.0

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


class Frozen:
    """The collector of a loop that keeps a large state between its steps (`watch`)."""

    def __init__(self, full_every: float = FULL_EVERY) -> None:
        self.full_every = full_every
        self._last_full: float | None = None
        self._frozen = False

    def between(self, now: float) -> None:
        """After a step, at `now` (seconds, the loop's clock): what is alive now is frozen, and
        first, at most every `full_every`, everything is walked once."""
        if self._last_full is None or now - self._last_full >= self.full_every:
            gc.unfreeze()
            gc.collect()
            self._last_full = now
        gc.freeze()
        self._frozen = True

    def end(self) -> None:
        if self._frozen:
            gc.unfreeze()
            self._frozen = False
