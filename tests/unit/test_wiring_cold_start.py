"""Each function's wiring module (handlers/wiring/<function>.py) keeps what it built for the container's life, and
forget_cold_start forgets what every one of them built, whichever were imported (the tests and the demo change the
environment between "cold starts")."""

from __future__ import annotations

from ecr_retention.handlers.wiring import forget_cold_start, once_per_cold_start


def test_a_wiring_is_built_once_until_the_cold_start_is_forgotten() -> None:
    builds: list[object] = []

    @once_per_cold_start
    def wiring() -> object:
        builds.append(object())
        return builds[-1]

    first = wiring()
    assert wiring() is first

    forget_cold_start()

    assert wiring() is not first
    assert len(builds) == 2


def test_forgetting_reaches_every_functions_wiring_module() -> None:
    from ecr_retention.handlers.wiring import collector, evaluate, push, report, sentinel, tagger, targets

    built = (
        targets.targets_at_cold_start,
        evaluate.evaluate_at_cold_start,
        report.report_at_cold_start,
        push.push_at_cold_start,
        tagger.tagger_at_cold_start,
        collector.collector_at_cold_start,
        sentinel.sentinel_at_cold_start,
    )
    kept = [function for function in built if function not in _forgotten_by_forget_cold_start()]

    assert kept == []


def _forgotten_by_forget_cold_start() -> list[object]:
    from ecr_retention.handlers import wiring

    return [forget.__self__ for forget in wiring._COLD_STARTS]  # type: ignore[attr-defined]
