"""Benchmarks of the purgatory library, each against a naive baseline in the same process.

* ``python -m purgatory.bench timer --live 10000,100000,1000000``: the timing wheel against a
  lazy-cancellation heap and a ``SortedList`` on one timer stream (:mod:`.timer`).
* ``python -m purgatory.bench purgatory``: Kafka's purgatory performance test on virtual time,
  the real purgatory against a naive one (:mod:`.purgatory_workload`).
* ``python -m purgatory.bench reaper``: the trio reaper's real-time expiry lateness against
  one trio task per operation (:mod:`.reaper_lateness`).

Add ``--json`` for one JSON object per line. Costs are process CPU time; tests never assert on
them (the smoke test only checks that the benchmarks run and agree with themselves).
"""
