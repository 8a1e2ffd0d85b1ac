"""The exception the benchmarks raise for a bad argument."""

__all__ = ["BenchArgumentError"]


class BenchArgumentError(ValueError):
    """A benchmark was given an argument outside its allowed range; the message says which."""
