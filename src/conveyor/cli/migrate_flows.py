"""Workflows in ``conveyor migrate``: a job waiting on parents moves together with them.

Jobs page by page would break a workflow twice over: deleting a moved parent from the
source cancels its dependants still there (a deleted parent never releases them), and a
child moved alone would wait on the target for a parent that is not there. So every
``waiting`` job, with the parents it waits on (transitively, and the succeeded ones whose
results it will be given), forms one *component*, moved in one import and deleted from
the source in one call: the edges, each child's ``pipe`` and its place among its
parents' children come along (``JobImport.flow``).

A component with a member migrate cannot move (a parent running on a source worker)
stays whole on the source; the rerun moves it once that job ended.

Example::

    components = workflow_components(source)
    movable = [c for c in components if c.movable]
"""

from __future__ import annotations

from conveyor.backends.base import Backend, JobFilter, JobFlow, JobListParams, JobRecord
from conveyor.records import record
from conveyor.states import JobState

#: States a component's jobs other than the waiting ones may be in to move: work still
#: to do, and succeeded parents (their results are piped into the children).
_MOVABLE_PARENTS = frozenset({JobState.QUEUED, JobState.SCHEDULED, JobState.SUCCEEDED})


@record
class Component:
    """Jobs joined by the edges of at least one waiting job; oldest first."""

    jobs: tuple[JobRecord, ...]
    flows: dict[str, JobFlow]

    @property
    def movable(self) -> bool:
        return all(j.state is JobState.WAITING or j.state in _MOVABLE_PARENTS for j in self.jobs)


def _all_waiting(source: Backend, page_size: int = 500) -> list[JobRecord]:
    found: list[JobRecord] = []
    wanted = JobFilter(states=(JobState.WAITING,))
    while True:
        after = found[-1].id if found else None
        page = source.job_list(JobListParams(after_id=after, limit=page_size, filter=wanted))
        if not page:
            return found
        found += page


def workflow_components(source: Backend) -> list[Component]:
    """Every waiting job of ``source`` grouped with the jobs it hangs on."""
    waiting = _all_waiting(source)
    if not waiting:
        return []
    jobs = {j.id: j for j in waiting}
    flows: dict[str, JobFlow] = {f.id: f for f in source.job_flow_many(list(jobs))}
    missing = sorted({p for f in flows.values() for p in f.parents} - set(jobs))
    for j in source.job_get_many(missing):
        jobs[j.id] = j
    # Union-find over the edges of the waiting jobs.
    root: dict[str, str] = {i: i for i in jobs}

    def find(i: str) -> str:
        while root[i] != i:
            root[i] = root[root[i]]
            i = root[i]
        return i

    for child, flow in flows.items():
        for parent in flow.parents:
            if parent in root:  # a parent deleted meanwhile: the child is settled there
                root[find(parent)] = find(child)
    groups: dict[str, list[JobRecord]] = {}
    for job_id in sorted(jobs):
        groups.setdefault(find(job_id), []).append(jobs[job_id])
    return [
        Component(tuple(members), {j.id: flows[j.id] for j in members if j.id in flows})
        for members in groups.values()
    ]
