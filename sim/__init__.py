"""sim: a deterministic discrete-event simulator of a Kafka cluster's commit latency.

It drives the project's real broker code (``apis``, ``replica``, ``coordinator``) in virtual
time. The pieces:

* :mod:`sim.engine` - the event loop (integer microseconds, FIFO ties, named RNG streams);
* :mod:`sim.network` - links with latency distributions, in-order delivery, spikes, outages;
* :mod:`sim.request_handling` - a broker's request queue and ``num.io.threads`` handler pool;
* :mod:`sim.scenario` - TOML scenario files, Kafka-named knobs, ``--set`` overrides;
* :mod:`sim.output` - the metrics recorder, Parquet/JSON/PNG run directories, summaries;
* :mod:`sim.runner` - ``run_scenario(scenario, seed=...) -> RunResult``;
* :mod:`sim.cli` - ``python -m sim run | scenarios | knobs | bench``.
"""
