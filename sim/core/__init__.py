"""sim.core: the simulator's ground floor, which every other part of ``sim`` builds on.

* :mod:`sim.core.engine`: the discrete-event engine (integer microseconds, seeded streams);
* :mod:`sim.core.network`: the simulated network (per-link latency, spikes, outages) and its
  settings;
* :mod:`sim.core.request_handling`: a broker's request handler pool (num.io.threads);
* :mod:`sim.core.distributions`, :mod:`sim.core.units`: random quantities, and durations and
  sizes as written in scenarios (settings classes declare their knobs the
  :mod:`replica.config_def` way: help text, unit, range validators);
* :mod:`sim.core.statistics`, :mod:`sim.core.queueing`: confidence intervals and the M/M/c
  results the simulator is validated against.

Nothing here imports from the rest of ``sim``; the layer check in the test suite
(``tests/test_layers.py``) keeps it so.
"""
