-- What became of each artifact of a conversation sent to its agent's external storage policy: where it went, its
-- size and the outcome, never its content (such a conversation retains nothing itself).
create table external_storage_deliveries (
  conversation_id text not null references conversations(id) on delete cascade,
  artifact text not null check (artifact in ('record', 'recording')),
  -- No foreign key: the outcome outlives a policy deleted later.
  policy_id text not null,
  bucket text not null,
  object_key text not null,
  status text not null check (status in ('delivered', 'failed')),
  bytes bigint,
  error text,
  finished_at timestamptz not null,
  primary key (conversation_id, artifact)
);
