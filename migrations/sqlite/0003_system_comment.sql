-- SystemComment: what the system recorded about a job, e.g. the GPU
-- out-of-memory error its node found at the end of its stderr.
ALTER TABLE jobs ADD COLUMN system_comment TEXT NOT NULL DEFAULT '';
