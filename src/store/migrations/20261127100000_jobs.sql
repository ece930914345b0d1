-- Durable background work (src/jobs/queue.ts, src/store/jobs.ts): a job is a row; a node claims due rows with
-- `for update skip locked`, so concurrent nodes never take the same one, and a claim whose node stopped
-- heartbeating (locked_at older than the lease) is claimed again. Nothing lives only in a process's memory.
create table jobs (
  id bigint generated always as identity primary key,
  kind text not null,
  -- At most one job per key (`<kind>:<conversation id>`, or the kind of a recurring job): enqueues are idempotent.
  key text unique,
  conversation_id text references conversations(id) on delete cascade,
  payload jsonb not null default '{}'::jsonb,
  status text not null default 'pending' check (status in ('pending', 'running', 'done', 'failed', 'skipped')),
  -- Kinds of the same conversation's jobs that must have settled (done, failed or skipped) before this one runs.
  after_kinds text[] not null default '{}',
  -- Only the node of this name claims it (work on files in that node's data directory); null: any node.
  node_id text,
  -- Attempts started (a claim counts one; a stop that aborts the run gives it back).
  attempts integer not null default 0,
  run_at timestamptz not null default now(),
  -- Recurring jobs run again this many milliseconds after each outcome; null: once.
  every_ms bigint check (every_ms is null or every_ms > 0),
  -- The claim: a token per claim (a late write of an older claim changes nothing), its node, its heartbeat.
  lock_token text,
  locked_by text,
  locked_at timestamptz,
  -- The last outcome: why it was skipped, the error of its last failed attempt, what it reported.
  reason text,
  error text,
  detail jsonb,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  check ((status = 'running') = (lock_token is not null))
);
create index jobs_due on jobs (run_at, id) where status = 'pending';
create index jobs_claimed on jobs (locked_at) where status = 'running';
create index jobs_conversation on jobs (conversation_id, kind) where conversation_id is not null;
