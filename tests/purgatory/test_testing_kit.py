"""purgatory.testing: the lifecycle machine checks user operation types, and catches broken ones.

Two correct custom types are property-tested by subclassing the machine (an operation that
needs N acknowledgements, and a message lease with a visibility timeout, with an extra
invariant of its own); four deliberately broken types are run through it and hypothesis must
report the violation.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Hashable, Sequence

import attrs
import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import invariant, run_state_machine_as_test

from purgatory import DelayedOperation
from purgatory.testing import (
    CallbackRecorder,
    ConditionOperation,
    Lifecycle,
    LifecycleViolation,
    PurgatoryLifecycleMachine,
)

RUN = settings(max_examples=50, stateful_step_count=50)

# -- a correct type: completes after N acknowledgements -----------------------------------


class AckCounter(DelayedOperation):
    """Completes once ``acks >= required`` (for example acks from N replicas)."""

    __slots__ = ("acks", "required")

    def __init__(self, timeout: int, required: int) -> None:
        super().__init__(timeout)
        self.acks = 0
        self.required = required

    def try_complete(self) -> bool:
        return self.force_complete() if self.acks >= self.required else False

    def on_complete(self) -> None:
        pass


class AckCounterLifecycle(PurgatoryLifecycleMachine[AckCounter]):
    def make_operation(self, timeout: int, keys: Sequence[Hashable]) -> AckCounter:
        return AckCounter(timeout, required=len(keys) + 1)

    def satisfy(self, operation: AckCounter) -> None:
        operation.acks = operation.required

    def make_progress(self, operation: AckCounter) -> None:
        if operation.acks < operation.required - 1:  # never enough on its own
            operation.acks += 1


AckCounterLifecycle.TestCase.settings = RUN
TestAckCounterLifecycle = AckCounterLifecycle.TestCase


# -- a correct type with its own invariant: a message lease (visibility timeout) ----------


@attrs.define
class MessageQueue:
    visible: list[str] = attrs.Factory(list)
    in_flight: dict[str, Lease] = attrs.Factory(dict)
    deleted: list[str] = attrs.Factory(list)


class Lease(DelayedOperation):
    """A message handed to a consumer: acknowledged -> deleted; lease expired -> visible again."""

    __slots__ = ("acked", "message", "queue")

    def __init__(self, timeout: int, queue: MessageQueue, message: str) -> None:
        super().__init__(timeout)
        self.queue, self.message, self.acked = queue, message, False
        queue.in_flight[message] = self

    def try_complete(self) -> bool:
        return self.force_complete() if self.acked else False

    def on_complete(self) -> None:
        del self.queue.in_flight[self.message]
        (self.queue.visible if self.is_expired else self.queue.deleted).append(self.message)


class LeaseLifecycle(PurgatoryLifecycleMachine[Lease]):
    def __init__(self) -> None:
        super().__init__()
        self.queue = MessageQueue()

    def make_operation(self, timeout: int, keys: Sequence[Hashable]) -> Lease:
        return Lease(timeout, self.queue, f"message-{len(self.records)}")

    def satisfy(self, operation: Lease) -> None:
        operation.acked = True

    def make_key(self, index: int) -> Hashable:
        return ("consumer", index)

    @invariant()
    def every_message_is_in_exactly_one_place(self) -> None:
        where = {Lifecycle.COMPLETED: "deleted", Lifecycle.EXPIRED: "visible"}
        for record in self.records.values():
            message = record.operation.message
            expected = where.get(record.state, "in_flight")  # pending or cancelled
            places = [
                name
                for name, messages in (
                    ("visible", self.queue.visible),
                    ("in_flight", self.queue.in_flight),
                    ("deleted", self.queue.deleted),
                )
                if message in messages
            ]
            assert places == [expected], f"{message} is in {places}, expected {expected}"


LeaseLifecycle.TestCase.settings = RUN
TestLeaseLifecycle = LeaseLifecycle.TestCase


# -- broken types must be caught ----------------------------------------------------------

FIND_BUG = settings(
    max_examples=100,
    stateful_step_count=30,
    derandomize=True,
    database=None,
    deadline=None,
    phases=(Phase.generate,),
    report_multiple_bugs=False,
    suppress_health_check=list(HealthCheck),
)


class FlagOperation(ConditionOperation):
    """Base of the broken types: a ConditionOperation with ``satisfied`` as its condition."""


class FlagLifecycle(PurgatoryLifecycleMachine[FlagOperation]):
    operation_type: type[FlagOperation] = FlagOperation

    def make_operation(self, timeout: int, keys: Sequence[Hashable]) -> FlagOperation:
        return self.operation_type(timeout)

    def satisfy(self, operation: FlagOperation) -> None:
        operation.satisfied = True


class CompletesTwice(FlagOperation):
    def try_complete(self) -> bool:
        if self.satisfied:
            self.on_complete()  # BUG: on_complete runs here, and again in force_complete
            return self.force_complete()
        return False


class TryCompleteWithSideEffects(FlagOperation):
    def try_complete(self) -> bool:
        self.calls.append("try_complete")  # BUG: the condition counts the tries
        if self.satisfied or self.calls.count("try_complete") >= 3:
            return self.force_complete()
        return False


class ClaimsCompletion(FlagOperation):
    def try_complete(self) -> bool:
        return self.satisfied  # BUG: returns True without force_complete()


class ClaimsCompletionForKey(FlagOperation):
    def try_complete_for_key(self, key: Hashable) -> bool:
        return self.satisfied  # BUG: returns True without force_complete()


class ExpiresWithoutCompleting(FlagOperation):
    def run(self) -> None:
        self.on_expiration()  # BUG: expiry must be "if force_complete(): on_expiration()"


@pytest.mark.parametrize(
    ("operation_type", "message"),
    [
        (CompletesTwice, r"on_complete ran 2 times"),
        (
            TryCompleteWithSideEffects,
            r"check_and_complete\(.*\) completed [1-9]\d* operations; expected 0",
        ),
        (ClaimsCompletion, r"try_complete\(\) returned True but did not complete"),
        (ClaimsCompletionForKey, r"try_complete_for_key\(\) returned True but did not complete"),
        (ExpiresWithoutCompleting, r"on_expiration must run once, right after on_complete"),
    ],
)
def test_the_machine_catches_a_broken_operation_type(
    operation_type: type[FlagOperation], message: str
) -> None:
    class Machine(FlagLifecycle):
        pass

    Machine.operation_type = operation_type
    with pytest.raises(LifecycleViolation, match=message):
        run_state_machine_as_test(Machine, settings=FIND_BUG)


@pytest.mark.parametrize(
    ("operation_type", "events"),
    [
        (CompletesTwice, [": satisfied before submission\n", ": submitted with timeout"]),
        (TryCompleteWithSideEffects, [": submitted with timeout", ": checked via 'key-"]),
    ],
)
def test_a_violation_names_the_operation_and_its_history(
    operation_type: type[FlagOperation], events: list[str]
) -> None:
    class Machine(FlagLifecycle):
        pass

    Machine.operation_type = operation_type
    with pytest.raises(LifecycleViolation) as caught:
        run_state_machine_as_test(Machine, settings=FIND_BUG)
    message = str(caught.value)
    name = operation_type.__name__
    assert re.search(rf"\n<{name} timeout=\d+ \w+> \(operation #\d+, keys \(.*\)\)", message)
    assert re.search(r"its history:\n  at t=\d+: ", message)
    assert all(event in message for event in events), message


def test_records_map_each_operation_to_its_record_in_submission_order() -> None:
    class Machine(FlagLifecycle):
        @invariant()
        def records_are_keyed_by_operation(self) -> None:
            assert isinstance(self.records, dict)
            for sequence, (operation, record) in enumerate(self.records.items()):
                assert record.operation is operation and record.sequence == sequence
                assert re.match(r"at t=\d+: (submitted|satisfied)", record.history[0])

    run_state_machine_as_test(Machine, settings=settings(FIND_BUG, max_examples=20))


def test_a_correct_flag_operation_passes_the_same_machine() -> None:
    run_state_machine_as_test(FlagLifecycle, settings=settings(FIND_BUG, max_examples=30))


def test_the_hooks_must_be_overridden() -> None:
    with pytest.raises(NotImplementedError, match="must override make_operation"):
        run_state_machine_as_test(PurgatoryLifecycleMachine, settings=FIND_BUG)


# -- CallbackRecorder ---------------------------------------------------------------------


def test_the_recorder_keeps_the_type_and_records_callbacks() -> None:
    recorder = CallbackRecorder()
    op = ConditionOperation(5)
    log = recorder.instrument(op)
    assert isinstance(op, ConditionOperation) and type(op).__name__ == "ConditionOperation"
    op.run()  # expire it
    assert log == ["on_complete(expired)", "on_expiration"]
    assert op.calls == ["on_complete", "on_expiration"]  # the original methods ran
    assert recorder.completions == [op]


def test_the_recorder_refuses_an_operation_twice_or_a_used_one() -> None:
    recorder = CallbackRecorder()
    op = ConditionOperation(5)
    recorder.instrument(op)
    with pytest.raises(LifecycleViolation, match="returned twice"):
        recorder.instrument(op)
    used = ConditionOperation(5)
    used.force_complete()
    with pytest.raises(LifecycleViolation, match="used operation"):
        recorder.instrument(used)


# -- packaging: hypothesis only where needed, never pytest --------------------------------


def _python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env={**os.environ, **env},
    )


def test_the_core_package_does_not_import_hypothesis() -> None:
    result = _python(
        "import sys, purgatory, purgatory.timing_wheel, purgatory.delayed_operation_purgatory\n"
        "assert 'hypothesis' not in sys.modules, 'purgatory imported hypothesis'\n"
    )
    assert result.returncode == 0, result.stderr


def test_the_kit_does_not_need_pytest() -> None:
    # pytest made unimportable; hypothesis' third-party plugins are off because trio's
    # plugin imports pytest when it is installed (that is trio's doing, not the kit's).
    result = _python(
        "import sys\n"
        "sys.modules['pytest'] = sys.modules['_pytest'] = None\n"
        "from hypothesis import settings\n"
        "from hypothesis.stateful import run_state_machine_as_test\n"
        "from purgatory.testing import ConditionOperation, PurgatoryLifecycleMachine\n"
        "class M(PurgatoryLifecycleMachine[ConditionOperation]):\n"
        "    def make_operation(self, timeout, keys): return ConditionOperation(timeout)\n"
        "    def satisfy(self, op): op.satisfied = True\n"
        "run_state_machine_as_test(M, settings=settings(max_examples=5, database=None))\n",
        HYPOTHESIS_NO_PLUGINS="1",
    )
    assert result.returncode == 0, result.stderr


def test_the_kit_says_it_needs_hypothesis() -> None:
    result = _python("import sys; sys.modules['hypothesis'] = None; import purgatory.testing")
    assert result.returncode != 0
    assert "purgatory.testing needs hypothesis" in result.stderr
    assert "kafka-purgatory[test]" in result.stderr
