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

For notebooks, three names are here (imported on first use, so ``import sim`` stays
instant): :func:`run_scenario`, :func:`load_run` (a run directory back as the
:class:`~sim.output.RunResult`, whose tables are also DataFrames: ``messages_df()``...) and
:func:`load_sweep` (a sweep's outputs as DataFrames, without Spark).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sim.runner import load_run, run_scenario
    from sim.sweep.frames import load_sweep

__all__ = ["load_run", "load_sweep", "run_scenario"]

_LAZY = {"load_run": "sim.runner", "run_scenario": "sim.runner", "load_sweep": "sim.sweep.frames"}


def __getattr__(name: str) -> Any:
    """The notebook names, imported when first used (PEP 562)."""
    if name not in _LAZY:
        raise AttributeError(f"module 'sim' has no attribute {name!r}")
    return getattr(import_module(_LAZY[name]), name)
