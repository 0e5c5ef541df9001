"""The cyclic garbage collector is paused while a command reads and decides, resumed (what was
made frozen) before a deploy acts, and as it was before once any command ends."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner

from flink_sql_runner.host import collector
from tests.support.examples import EXAMPLES

pytestmark = pytest.mark.fast


@pytest.fixture(autouse=True)
def collector_as_before() -> Iterator[None]:
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    yield
    collector.restore()
    assert gc.isenabled() and gc.get_freeze_count() == frozen


def test_paused_resumed_frozen_and_restored() -> None:
    collector.pause()
    assert not gc.isenabled()
    collector.pause()  # twice: still one pause
    made = [[] for _ in range(1000)]
    collector.resume()
    assert gc.isenabled() and gc.get_freeze_count() >= len(made)
    collector.restore()
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_a_collector_off_before_stays_off() -> None:
    gc.disable()
    try:
        collector.pause()
        collector.resume()
        collector.restore()
        assert not gc.isenabled() and gc.get_freeze_count() == 0
    finally:
        gc.enable()


def test_validate_reads_without_collecting_and_puts_it_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from flink_sql_runner.act.deployment import Deployment
    from flink_sql_runner.cli.main import main

    seen: list[bool] = []
    real = Deployment.load

    def load(self: Deployment, *args: Any, **kwargs: Any) -> Any:
        seen.append(gc.isenabled())
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Deployment, "load", load)
    result = CliRunner().invoke(main, ["validate", *EXAMPLES])
    assert result.exit_code == 0, result.output
    assert seen == [False]
    assert gc.isenabled(), "on again once the command ended"


def test_a_deploy_acts_with_the_collector_on_and_what_it_planned_frozen() -> None:
    from flink_sql_runner.cli import deploy

    class Deployment:
        """What `_deploy` asks of a deployment: a plan shown, then acting on it."""

        say: Any = None

        def deploy(self, jobs: Any, *, on_plan: Any, **_: Any) -> Any:
            plan = deploy.Plan(())
            assert not gc.isenabled(), "paused while it reads and decides"
            on_plan(plan)
            self.acting = (gc.isenabled(), gc.get_freeze_count())
            return plan, {}

    collector.pause()
    made = Deployment()
    assert deploy._deploy(made, [], "json", dry_run=False, include_orphans=True) == 0  # type: ignore[arg-type]
    on, frozen = made.acting
    assert on and frozen > 0


# -- a loop that freezes between its steps (`watch`) -------------------------------------------


class _Cycle:
    """An object in a reference cycle: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self


def test_what_a_step_left_is_frozen_and_cycles_are_freed_within_the_full_interval() -> None:
    import weakref

    loop = collector.Frozen(full_every=600)
    loop.between(0.0)  # the first: everything walked once, then frozen
    assert gc.get_freeze_count() > 0
    garbage = _Cycle()
    gone = weakref.ref(garbage)
    loop.between(15.0)  # frozen with the rest (alive until a full collection)
    del garbage
    gc.collect()
    assert gone() is not None, "a frozen cycle is not walked by collections between"
    loop.between(599.0)
    assert gone() is not None
    loop.between(615.0)  # 600 s after the last full collection: walked, freed
    assert gone() is None
    loop.end()
    assert gc.get_freeze_count() == 0


def test_watch_freezes_between_its_looks_and_not_after(tmp_path: Any) -> None:
    """`Watcher.run` (the `watch` command's loop) freezes between looks and unfreezes at its
    end; a watcher without a collector (the tests' and the simulation's) leaves it as is."""
    import io

    from flink_sql_runner.act.deployment import Deployment
    from flink_sql_runner.act.settings import Settings
    from flink_sql_runner.watch.events import Notifier
    from flink_sql_runner.watch.watcher import Watcher, WatchSettings
    from tests.support.fakes import FakeStore, FakeTarget

    deployment = Deployment(Settings(state_dir=tmp_path), store=FakeStore(), target=FakeTarget())
    frozen: list[int] = []

    class Counted(collector.Frozen):
        def between(self, now: float) -> None:
            super().between(now)
            frozen.append(gc.get_freeze_count())
            if len(frozen) == 2:
                watcher.stopping.set()

    watcher = Watcher(deployment, WatchSettings(interval=0.01), Notifier(io.StringIO()),
                      collector=Counted())  # fmt: skip
    watcher.run()
    assert len(frozen) == 2 and all(count > 0 for count in frozen)
    assert gc.get_freeze_count() == 0
    plain = Watcher(deployment, WatchSettings(interval=0.01), Notifier(io.StringIO()))
    plain.run(once=True)
    assert gc.get_freeze_count() == 0
