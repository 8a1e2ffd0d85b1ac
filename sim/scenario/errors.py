"""The one exception a bad scenario raises."""

from __future__ import annotations

__all__ = ["ScenarioError"]


class ScenarioError(ValueError):
    """A scenario file, override or field value is invalid.

    ``str(error)`` is ONE line, ``scenario error: <field path>: <what is wrong>``, ready to
    print as is. ``field`` is the dotted path of the offending field (``""`` for the whole
    scenario) and ``problem`` the part after it.
    """

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = " ".join(problem.split())  # one line, whatever the cause said
        where = f"{field}: " if field else ""
        super().__init__(f"scenario error: {where}{self.problem}")
