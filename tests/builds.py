"""What a test passing a bad argument may expect from each build.

Pure Python leaves every check to the library, which raises its specific error. In the
compiled build (docs/benchmarks.md) the annotated parameter types of a compiled function are
enforced at the call: a value that is not an instance of the annotated type (a float, a str or
None for an ``int``) raises TypeError before the library's own check runs. A bool *is* an int
there: it arrives as 1 or 0, so the library's own "not a bool" check cannot see it
(tests/purgatory/test_errors.py states that difference once, explicitly).
"""

from __future__ import annotations

import sys
from contextlib import AbstractContextManager

import pytest


def compiled(obj: object) -> bool:
    """True when ``obj`` (a class or function) comes from a compiled module."""
    path = getattr(sys.modules[obj.__module__], "__file__", None) or ""
    return not path.endswith(".py")


def bad_argument(
    error: type[BaseException],
    value: object,
    *,
    where: object,
    annotated: type = int,
    match: str | None = None,
) -> AbstractContextManager[object]:
    """``pytest.raises`` for calling ``where`` with ``value`` for a parameter annotated
    ``annotated``: the library's ``error`` (message ``match``) on pure Python; in the compiled
    build, TypeError when ``value`` is not an ``annotated``. Not for bools passed as ints."""
    assert not (annotated is int and isinstance(value, bool)), "a bool is an int when compiled"
    if compiled(where) and not isinstance(value, annotated):
        return pytest.raises(TypeError, match=f"{annotated.__name__} object expected; got")
    return pytest.raises(error, match=match)
