"""Benchmarks of the consume proxy: ``python -m consume_proxy.bench {throughput,wakeup}``.

* :mod:`consume_proxy.bench.throughput`: reads + acknowledgements per second through one
  server, on three paths: the core's calls, the HTTP front end without sockets, and HTTP over
  loopback (client and server in one process); per second of process CPU time, wall-clock
  rates beside them.
* :mod:`consume_proxy.bench.wakeup`: how long after a record arrives a reader has it, for a
  long poll waiting in the proxy against a reader polling every few milliseconds, over HTTP,
  in the same run; and how many requests each spent.

Kafka is left out of both: records are appended to the proxy directly, as the feed does.
"""
