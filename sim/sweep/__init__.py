"""Spark sweeps: run a study's grid of simulations as Spark tasks, analyse, report.

A study file (:mod:`.study`) names a base scenario, a grid over its knobs and a number of
seeds. :func:`~sim.sweep.job.run_sweep` runs one Spark task per (point, seed) and writes the
records as Parquet partitioned by point; :func:`~sim.sweep.analysis.analyse` computes
per-run percentiles and counts in Spark SQL, then per-point means with confidence
intervals across seeds on the driver;
:func:`~sim.sweep.report.write_report` writes a Markdown page with plots. A run that raises,
runs past its time limit (:mod:`.time_limit`) or whose worker dies is recorded as failed while
the others finish, and every run's outcome is kept on disk (:mod:`.task_files`), so a rerun
resumes. The command-line entry points are in :mod:`.cli`; Java 17+ is found by :mod:`.java`.

Spark is only imported by the modules that use it, so ``sim.sweep.study`` and
``sim.sweep.grid`` work without PySpark installed.
"""
