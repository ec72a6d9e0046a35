-- conveyor check: one row per problem (kind, job_id, detail). Read-only. Every branch is
-- an impossible state, a row that can never move (docs/state-machine.md: no transition
-- would ever take it out of its state), or an orphan; none of them can be produced by
-- conveyor itself.
-- One text for every SQL store (sql/integrity.py fills it in): {known_states},
-- {finished_states} and {active_states} come from conveyor.states; the other {names} are
-- each store's spelling (its dialect module's INTEGRITY, which says why it differs).
SELECT 'running_without_claim', id, 'running with no worker or no token'
FROM jobs WHERE state = 'running' AND (worker_id IS NULL OR token = 0)
UNION ALL
SELECT 'claim_without_live_worker', j.id, 'claimed by ' || j.worker_id || ', which is '
       || CASE WHEN w.id IS NULL THEN 'not registered' ELSE 'silent since its last heartbeat' END
FROM jobs AS j LEFT JOIN workers AS w ON w.id = j.worker_id
WHERE j.state = 'running' AND j.worker_id IS NOT NULL
  AND (w.id IS NULL OR w.heartbeat_at < {stale_before})
UNION ALL
SELECT 'active_with_finished_at', id, state || ' job has finished_at set'
FROM jobs WHERE state IN ('queued', 'scheduled') AND finished_at IS NOT NULL
UNION ALL
SELECT 'finished_without_finished_at', id, state || ' job has no finished_at'
FROM jobs WHERE state IN ({finished_states}) AND finished_at IS NULL
UNION ALL
SELECT 'not_running_with_worker', id, state || ' job still names worker ' || worker_id
FROM jobs WHERE state != 'running' AND worker_id IS NOT NULL
UNION ALL
SELECT 'unknown_state', id, 'state ' || {quote}(state) || ' is not a conveyor state'
FROM jobs WHERE state NOT IN ({known_states})
UNION ALL
SELECT 'attempts_over_max', id, 'attempt ' || attempt || ' > max_attempts ' || max_attempts
FROM jobs WHERE attempt > max_attempts
UNION ALL
SELECT 'orphan_attempt', a.job_id, 'attempt row (token ' || a.token || ') of a missing job'
FROM attempts AS a WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.id = a.job_id)
UNION ALL
SELECT 'orphan_log', l.job_id, count(*) || ' log record(s) of a missing job'
FROM job_logs AS l WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.id = l.job_id)
GROUP BY l.job_id
UNION ALL
SELECT 'queued_without_queue', id, 'queued in queue ' || {quote}(queue) || ', which no worker can consume'
FROM jobs WHERE state = 'queued' AND {queue_unusable}
UNION ALL
SELECT 'waiting_on_negative', id, 'waiting on ' || {waiting_on_text} || ' parents, below zero'
FROM jobs WHERE state = 'waiting' AND waiting_on < 0
UNION ALL
SELECT 'waiting_without_parent', j.id, 'waiting, but no parent of it can still finish: it never runs'
-- A job held behind a failed job of its sequence (on_failure "block") waits on purpose,
-- until an operator releases it: not a problem (rules.sequence_blocked_reason's prefix;
-- substr, not LIKE: its wildcard is a placeholder character to PyMySQL).
FROM jobs AS j WHERE j.state = 'waiting'
  AND (j.reason IS NULL OR substr(j.reason, 1, 18) <> 'sequence blocked: ') AND NOT EXISTS (
    SELECT 1 FROM job_deps AS d JOIN jobs AS p ON p.id = d.parent_id
    WHERE d.child_id = j.id AND p.state IN ({active_states}))
-- a durable job parked by conveyor.wait_for waits for an event or its deadline instead
AND NOT EXISTS (SELECT 1 FROM job_steps AS s WHERE s.job_id = j.id AND s.state = 'waiting')
UNION ALL
SELECT 'scheduled_never_due', id, 'scheduled at ' || {run_at_text} || ', which never comes'
FROM jobs WHERE state = 'scheduled' AND {run_at_never}
UNION ALL
-- The rescue's last resort is an expired lease: one that never expires, if its worker
-- does not know the job (a lost claim), means nothing ever takes it back.
SELECT 'running_without_lease', id, 'running under ' || worker_id || ' with lease_until '
       || {lease_text} || ', which never expires'
FROM jobs WHERE state = 'running' AND worker_id IS NOT NULL
  AND {lease_never}
