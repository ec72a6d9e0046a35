"""The backend seam in one import: records, params and protocols.

The seam lives in three modules -- :mod:`~conveyor.backends.records` (what backends hand
back), :mod:`~conveyor.backends.params` (one params record per method) and
:mod:`~conveyor.backends.protocols` (the ``HotPath``, ``Flow`` and ``Operations``
protocols, ``Backend`` = all three, and the ``FEATURES`` a backend may declare). This
module re-exports them so callers need one import line.

Example:
    >>> from conveyor.backends.base import JobInsertParams, require_feature
    >>> JobInsertParams(id="j1", task="t", queue="q", payload="{}").is_plain
    True
"""

from __future__ import annotations

from conveyor.backends.params import (
    MAX_HISTOGRAM_BUCKETS,
    TRUNCATED_LOGGER,
    TRUNCATED_MESSAGE,
    IntegrityCheckParams,
    JobCancelParams,
    JobClaimParams,
    JobCountParams,
    JobDependenciesParams,
    JobExtendLeasesParams,
    JobFilter,
    JobFinishedHistogramParams,
    JobFinishParams,
    JobImport,
    JobImportParams,
    JobInsertBatchParams,
    JobInsertParams,
    JobListParams,
    JobLogInsertParams,
    JobLogListParams,
    JobProgressParams,
    JobPurgeParams,
    JobReleaseParams,
    JobRescueParams,
    JobRetryParams,
    JobWaitParams,
    LimitSpec,
    PeriodicFireParams,
    QueuePauseParams,
    QueueResumeParams,
    WhereCondition,
    WorkerHeartbeatParams,
    check_histogram,
)
from conveyor.backends.protocols import (
    FEATURES,
    Backend,
    Flow,
    HotPath,
    Operations,
    flow_features_of,
    require_feature,
)
from conveyor.backends.records import (
    AttemptRecord,
    ClaimedJob,
    Dependency,
    FinishedBucket,
    IntegrityProblem,
    JobLogRecord,
    JobRecord,
    LeaseStatus,
    PeriodicRecord,
    QueueInfo,
    QueueStats,
    RescueResult,
    WorkerInfo,
)

__all__ = [
    "FEATURES",
    "MAX_HISTOGRAM_BUCKETS",
    "TRUNCATED_LOGGER",
    "TRUNCATED_MESSAGE",
    "AttemptRecord",
    "Backend",
    "ClaimedJob",
    "Dependency",
    "FinishedBucket",
    "Flow",
    "HotPath",
    "IntegrityCheckParams",
    "IntegrityProblem",
    "JobCancelParams",
    "JobClaimParams",
    "JobCountParams",
    "JobDependenciesParams",
    "JobExtendLeasesParams",
    "JobFilter",
    "JobFinishParams",
    "JobFinishedHistogramParams",
    "JobImport",
    "JobImportParams",
    "JobInsertBatchParams",
    "JobInsertParams",
    "JobListParams",
    "JobLogInsertParams",
    "JobLogListParams",
    "JobLogRecord",
    "JobProgressParams",
    "JobPurgeParams",
    "JobRecord",
    "JobReleaseParams",
    "JobRescueParams",
    "JobRetryParams",
    "JobWaitParams",
    "LeaseStatus",
    "LimitSpec",
    "Operations",
    "PeriodicFireParams",
    "PeriodicRecord",
    "QueueInfo",
    "QueuePauseParams",
    "QueueResumeParams",
    "QueueStats",
    "RescueResult",
    "WhereCondition",
    "WorkerHeartbeatParams",
    "WorkerInfo",
    "check_histogram",
    "flow_features_of",
    "require_feature",
]
