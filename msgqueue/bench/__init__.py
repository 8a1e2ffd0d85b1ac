"""Benchmarks of the message queue: ``python -m msgqueue.bench {throughput,expiry}``.

* :mod:`msgqueue.bench.throughput`: messages per second for insert, get-and-hide and delete,
  in process and over HTTP (loopback), on each back end; rates per second of process CPU
  time (the server and the client share the process), wall-clock rates beside them.
* :mod:`msgqueue.bench.expiry`: how far from its deadline a ttl or hide takes effect, for
  100,000 messages, with the engine's timers against a model of the original's 1-second
  sweep over whole-second deadlines, in the same run and in virtual time.
"""
