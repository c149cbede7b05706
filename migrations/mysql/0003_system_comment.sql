-- SystemComment: what the system recorded about a job, e.g. the GPU
-- out-of-memory error its node found at the end of its stderr. VARCHAR:
-- MySQL before 8.0.13 allows no default on TEXT (the agent's text is at
-- most about 220 characters, the controller's cap 1024).
ALTER TABLE jobs ADD COLUMN system_comment VARCHAR(1024) NOT NULL DEFAULT '';
