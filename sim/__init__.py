"""sim: a deterministic discrete-event simulator of a Kafka cluster's commit latency.

It drives the project's real broker code (``apis``, ``replica``, ``coordinator``, through the
in-process ``cluster``) in virtual time. Its layers, each importing only those below it:

* :mod:`sim.core` - the engine (integer microseconds, FIFO ties, named RNG streams), the
  network, a broker's request handler pool, distributions, units, knob declarations,
  statistics;
* :mod:`sim.clients` - simulated Kafka clients: a Sarama-style producer, a consumer, Burrow;
* :mod:`sim.scenario` - TOML scenario files, Kafka-named knobs, ``--set`` overrides;
* :mod:`sim.output` - the metrics recorder, Parquet/JSON/PNG run directories, summaries;
* :mod:`sim.world` - one run's world: the cluster on the simulated network, clients, faults;
* :mod:`sim.runner` - ``run_scenario(scenario, seed=...) -> RunResult``;
* :mod:`sim.sweep` - grids of runs on Spark, their analysis and report;
* :mod:`sim.cli` - ``python -m sim run | scenarios | knobs | bench | sweep``.
"""
