-- sacct reads jobs in (submit_time, job_id) order: one index serves the
-- time window and the order (no sort step).
CREATE INDEX jobs_submit_id ON jobs (submit_time, job_id);
DROP INDEX jobs_submit;
