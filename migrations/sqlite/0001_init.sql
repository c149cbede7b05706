-- Drover accounting schema, version 1. Times are epoch seconds, booleans 0/1.

CREATE TABLE jobs (
    cluster VARCHAR(128) NOT NULL,
    job_id BIGINT NOT NULL,
    submit_time BIGINT NOT NULL,
    array_job_id BIGINT NOT NULL,
    array_task_id BIGINT NOT NULL,
    array_pending TEXT NOT NULL,
    array_max_running BIGINT NOT NULL,
    job_name TEXT NOT NULL,
    uid BIGINT NOT NULL,
    user_name VARCHAR(128) NOT NULL,
    gid BIGINT NOT NULL,
    account VARCHAR(128) NOT NULL,
    qos VARCHAR(128) NOT NULL,
    part VARCHAR(128) NOT NULL,
    eligible_time BIGINT NOT NULL,
    start_time BIGINT NOT NULL,
    end_time BIGINT NOT NULL,
    state BIGINT NOT NULL,
    exit_code BIGINT NOT NULL,
    exit_signal BIGINT NOT NULL,
    cancelled BIGINT NOT NULL,
    cancelled_by BIGINT NOT NULL,
    time_limit BIGINT NOT NULL,
    nodelist TEXT NOT NULL,
    nnodes BIGINT NOT NULL,
    ncpus BIGINT NOT NULL,
    ntasks BIGINT NOT NULL,
    req_tres TEXT NOT NULL,
    alloc_tres TEXT NOT NULL,
    req_mem_mb BIGINT NOT NULL,
    req_mem_per_cpu BIGINT NOT NULL,
    work_dir TEXT NOT NULL,
    job_comment TEXT NOT NULL,
    reason TEXT NOT NULL,
    cpu_time_usec BIGINT NOT NULL,
    max_rss_kb BIGINT NOT NULL,
    gpu_util_pct BIGINT NOT NULL,
    gpu_mem_max_mb BIGINT NOT NULL,
    restart_count BIGINT NOT NULL,
    transition BIGINT NOT NULL,
    constraints TEXT NOT NULL,
    priority BIGINT NOT NULL,
    wckey TEXT NOT NULL,
    batch_host TEXT NOT NULL,
    derived_exit_code BIGINT NOT NULL,
    oom BIGINT NOT NULL,
    PRIMARY KEY (cluster, job_id, submit_time)
);
CREATE INDEX jobs_job_id ON jobs (job_id);
CREATE INDEX jobs_array ON jobs (array_job_id);
CREATE INDEX jobs_uid ON jobs (uid, submit_time);
CREATE INDEX jobs_end ON jobs (end_time);
CREATE INDEX jobs_submit ON jobs (submit_time);
CREATE INDEX jobs_account ON jobs (account);

CREATE TABLE steps (
    cluster VARCHAR(128) NOT NULL,
    job_id BIGINT NOT NULL,
    submit_time BIGINT NOT NULL,
    step_id BIGINT NOT NULL,
    step_name TEXT NOT NULL,
    nodelist TEXT NOT NULL,
    nnodes BIGINT NOT NULL,
    ntasks BIGINT NOT NULL,
    ncpus BIGINT NOT NULL,
    start_time BIGINT NOT NULL,
    end_time BIGINT NOT NULL,
    state BIGINT NOT NULL,
    exit_code BIGINT NOT NULL,
    exit_signal BIGINT NOT NULL,
    cpu_time_usec BIGINT NOT NULL,
    max_rss_kb BIGINT NOT NULL,
    gpu_util_pct BIGINT NOT NULL,
    gpu_mem_max_mb BIGINT NOT NULL,
    alloc_tres TEXT NOT NULL,
    PRIMARY KEY (cluster, job_id, submit_time, step_id)
);

CREATE TABLE clusters (
    name VARCHAR(128) NOT NULL PRIMARY KEY,
    control_host TEXT NOT NULL,
    control_port BIGINT NOT NULL,
    cpus BIGINT NOT NULL,
    nodes BIGINT NOT NULL,
    tres TEXT NOT NULL,
    registered BIGINT NOT NULL
);

CREATE TABLE accounts (
    name VARCHAR(128) NOT NULL PRIMARY KEY,
    description TEXT NOT NULL,
    organization TEXT NOT NULL
);

CREATE TABLE users (
    name VARCHAR(128) NOT NULL PRIMARY KEY,
    default_account VARCHAR(128) NOT NULL,
    admin_level VARCHAR(32) NOT NULL
);

CREATE TABLE qos (
    name VARCHAR(128) NOT NULL PRIMARY KEY,
    id BIGINT NOT NULL,
    description TEXT NOT NULL,
    priority BIGINT NOT NULL,
    preempt TEXT NOT NULL,
    preempt_mode VARCHAR(32) NOT NULL,
    grace_time BIGINT NOT NULL,
    usage_factor REAL NOT NULL,
    grp_tres TEXT NOT NULL,
    grp_jobs BIGINT NOT NULL,
    grp_submit_jobs BIGINT NOT NULL,
    max_jobs BIGINT NOT NULL,
    max_submit_jobs BIGINT NOT NULL,
    max_tres_per_job TEXT NOT NULL,
    max_tres_per_user TEXT NOT NULL,
    max_wall_min BIGINT NOT NULL
);

CREATE TABLE assocs (
    id BIGINT NOT NULL PRIMARY KEY,
    cluster VARCHAR(128) NOT NULL,
    account VARCHAR(128) NOT NULL,
    user_name VARCHAR(128) NOT NULL,
    part VARCHAR(128) NOT NULL,
    parent VARCHAR(128) NOT NULL,
    shares BIGINT NOT NULL,
    grp_tres TEXT NOT NULL,
    grp_jobs BIGINT NOT NULL,
    grp_submit_jobs BIGINT NOT NULL,
    max_jobs BIGINT NOT NULL,
    max_submit_jobs BIGINT NOT NULL,
    max_tres_per_job TEXT NOT NULL,
    max_tres_per_user TEXT NOT NULL,
    max_wall_min BIGINT NOT NULL,
    qos TEXT NOT NULL,
    default_qos VARCHAR(128) NOT NULL,
    UNIQUE (cluster, account, user_name, part)
);

-- Hourly roll-up of allocated resources per association (sreport, fair-share).
CREATE TABLE usage_hour (
    cluster VARCHAR(128) NOT NULL,
    account VARCHAR(128) NOT NULL,
    user_name VARCHAR(128) NOT NULL,
    hour_start BIGINT NOT NULL,
    cpu_secs BIGINT NOT NULL,
    gpu_secs BIGINT NOT NULL,
    mem_mb_secs BIGINT NOT NULL,
    PRIMARY KEY (cluster, account, user_name, hour_start)
);
CREATE INDEX usage_hour_time ON usage_hour (hour_start);

-- Counters: the association version the controller polls, id sequences.
CREATE TABLE counters (
    name VARCHAR(64) NOT NULL PRIMARY KEY,
    value BIGINT NOT NULL
);
INSERT INTO counters (name, value) VALUES ('assoc_version', 1);
INSERT INTO counters (name, value) VALUES ('next_id', 2);
INSERT INTO qos (name, id, description, priority, preempt, preempt_mode, grace_time, usage_factor,
    grp_tres, grp_jobs, grp_submit_jobs, max_jobs, max_submit_jobs, max_tres_per_job,
    max_tres_per_user, max_wall_min)
    VALUES ('normal', 1, 'Normal QOS default', 0, '', 'OFF', 0, 1.0, '', -1, -1, -1, -1, '', '', -1);
INSERT INTO accounts (name, description, organization) VALUES ('root', 'default root account', 'root');
