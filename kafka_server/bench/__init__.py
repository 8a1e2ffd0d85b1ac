"""Benchmarks of the wire-protocol server against librdkafka's mock cluster.

See docs/benchmarks.md.
"""
