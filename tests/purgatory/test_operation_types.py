"""An operation type that cannot work in a purgatory is refused when its first operation is
created, with a message that says how to fix it, before any purgatory state changes."""

from __future__ import annotations

import attrs
import pytest

from purgatory import DelayedOperation, DelayedOperationPurgatory, InvalidOperationTypeError


class Plain(DelayedOperation):
    __slots__ = ()

    def try_complete(self) -> bool:
        return False

    def on_complete(self) -> None:
        pass


@attrs.define  # eq=True by default: attrs adds __eq__ and sets __hash__ = None
class AttrsDefaultEq(Plain):
    wanted: int = 1

    def __attrs_post_init__(self) -> None:
        super().__init__(10)


@attrs.define(eq=False)
class AttrsNoEq(Plain):
    wanted: int = 1

    def __attrs_post_init__(self) -> None:
        super().__init__(10)


@attrs.define(frozen=True)  # hashable, but by value: two equal operations would collide
class AttrsFrozen(Plain):
    wanted: int = 1

    def __attrs_post_init__(self) -> None:
        super().__init__(10)


@attrs.define(slots=False)  # attrs patches __eq__ in after the class statement ran
class AttrsDictClass(Plain):
    wanted: int = 1

    def __attrs_post_init__(self) -> None:
        super().__init__(10)


class ValueEq(Plain):
    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ValueEq)

    __hash__ = Plain.__hash__  # hashable again, still equal by value


@pytest.mark.parametrize("operation_type", [AttrsDefaultEq, AttrsDictClass])
def test_an_unhashable_operation_type_is_refused_at_construction(
    operation_type: type[DelayedOperation],
) -> None:
    purgatory: DelayedOperationPurgatory[DelayedOperation] = DelayedOperationPurgatory("p")
    with pytest.raises(InvalidOperationTypeError) as refused:
        operation = operation_type()  # type: ignore[call-arg]
        purgatory.try_complete_else_watch(operation, ["k"])  # used to raise from the wheel
    message = str(refused.value)
    assert operation_type.__qualname__ in message and "unhashable" in message
    assert "@attrs.define(eq=False)" in message
    assert isinstance(refused.value, TypeError)
    assert (purgatory.watched, purgatory.num_delayed, purgatory.watch_keys()) == (0, 0, [])


@pytest.mark.parametrize("operation_type", [AttrsFrozen, ValueEq])
def test_an_operation_type_equal_by_value_is_refused(
    operation_type: type[DelayedOperation],
) -> None:
    with pytest.raises(InvalidOperationTypeError, match="compares operations by value"):
        operation_type() if operation_type is AttrsFrozen else operation_type(10)  # type: ignore[call-arg]


def test_an_attrs_operation_type_without_eq_works() -> None:
    purgatory: DelayedOperationPurgatory[AttrsNoEq] = DelayedOperationPurgatory("p")
    first, second = AttrsNoEq(), AttrsNoEq()  # equal fields, distinct operations
    purgatory.try_complete_else_watch(first, ["k"])
    purgatory.try_complete_else_watch(second, ["k"])
    assert (purgatory.watched, purgatory.num_delayed) == (2, 2)
    assert second.force_complete() and not first.is_completed
    assert purgatory.num_delayed == 1


# -- a subclass that forgets a method ------------------------------------------------------


class ForgetsTryComplete(DelayedOperation):
    __slots__ = ()

    def on_complete(self) -> None:
        pass


class ForgetsBoth(DelayedOperation):
    __slots__ = ()


class AbstractMiddle(DelayedOperation):
    """A base for other operation types: never instantiated itself, so never refused."""

    __slots__ = ()

    def on_complete(self) -> None:
        pass


class Concrete(AbstractMiddle):
    __slots__ = ()

    def try_complete(self) -> bool:
        return False


def test_a_subclass_without_try_complete_is_refused_at_construction() -> None:
    purgatory: DelayedOperationPurgatory[DelayedOperation] = DelayedOperationPurgatory("p")
    with pytest.raises(InvalidOperationTypeError) as refused:
        # it used to fail at submission, with an empty NotImplementedError
        purgatory.try_complete_else_watch(ForgetsTryComplete(10), ["k"])
    assert str(refused.value) == (
        "ForgetsTryComplete does not override try_complete(): a DelayedOperation subclass "
        "must implement try_complete() and on_complete()"
    )
    with pytest.raises(
        InvalidOperationTypeError, match=r"override try_complete\(\) nor on_complete\(\)"
    ):
        ForgetsBoth(10)
    with pytest.raises(InvalidOperationTypeError, match=r"DelayedOperation does not override"):
        DelayedOperation(10)
    assert (purgatory.watched, purgatory.num_delayed) == (0, 0)
    assert Concrete(10).try_complete() is False  # an intermediate base may leave it out
