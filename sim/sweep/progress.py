"""Progress of a running Spark job: a tqdm bar fed by polling Spark's StatusTracker.

The job runs in one background thread (the driver's only one) under a unique job group; the
calling thread polls the tracker four times a second and moves the bar by the number of
completed tasks of the group's stages. Failed task attempts that Spark retries show in the
bar's postfix; Ctrl-C cancels the group's jobs, with Spark's log silenced first. This lives at
the program's edge: wall-clock polling never reaches the simulator.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import sys
from collections.abc import Callable
from typing import TypeVar

from pyspark import SparkContext
from tqdm import tqdm

T = TypeVar("T")

POLL_INTERVAL_S = 0.25
_group_numbers = itertools.count()


def _task_counts(sc: SparkContext, group: str) -> tuple[int, int]:
    """(completed, failed) task counts over every stage of the group's jobs so far."""
    tracker = sc.statusTracker()
    completed = failed = 0
    for job_id in tracker.getJobIdsForGroup(group):
        job = tracker.getJobInfo(job_id)
        if job is None:
            continue
        for stage_id in job.stageIds:
            stage = tracker.getStageInfo(stage_id)
            if stage is not None:
                completed += stage.numCompletedTasks
                failed += stage.numFailedTasks
    return completed, failed


def run_with_progress(
    sc: SparkContext, action: Callable[[], T], *, total: int, description: str, enabled: bool
) -> T:
    """Run ``action`` (which starts Spark jobs) and return its result, showing a progress bar.

    ``total`` is the number of tasks expected. With ``enabled=False`` the action simply runs
    in the calling thread. Whatever ``action`` raises is re-raised here.
    """
    if not enabled:
        return action()
    group = f"sim-sweep-{next(_group_numbers)}"

    def in_group() -> T:
        sc.setJobGroup(group, description)
        return action()

    with (
        concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool,
        tqdm(total=total, desc=description, unit="run", file=sys.stderr, mininterval=1.0) as bar,
    ):
        future = pool.submit(in_group)
        while True:
            try:
                result = future.result(timeout=POLL_INTERVAL_S)
            except KeyboardInterrupt:
                # The caller says "interrupted" in its own line: the cancelled tasks' warnings
                # and stack traces would only bury it.
                sc.setLogLevel("OFF")
                sc.cancelJobGroup(group)
                raise
            except concurrent.futures.TimeoutError:
                completed, failed = _task_counts(sc, group)
                if min(completed, total) > bar.n:
                    bar.update(min(completed, total) - bar.n)
                if failed:
                    bar.set_postfix(retried=failed, refresh=False)
                continue
            bar.update(total - bar.n)
            return result
