-- Webhooks: a project's endpoints and the log of deliveries to them. An event (conversation.ended, .analyzed,
-- .failed) becomes one delivery per subscribed endpoint, each sent by a job of its own; the body is stored as the
-- exact bytes signed, so every attempt signs and sends the same body (Standard Webhooks: same webhook-id on retry).

create table webhook_endpoints (
  id text primary key,
  org_id text not null references organizations(id) on delete cascade,
  project_id text not null references projects(id) on delete cascade,
  url text not null,
  description text,
  -- Event types delivered to this endpoint (a JSON array of strings).
  events jsonb not null,
  -- The signing secret, `whsec_<base64>`: kept as is because every delivery is signed with it; shown once.
  secret text not null,
  created_at timestamptz not null default now()
);
create index webhook_endpoints_project on webhook_endpoints (project_id, created_at);

create table webhook_deliveries (
  id text primary key,
  endpoint_id text not null references webhook_endpoints(id) on delete cascade,
  -- The event: its id is the `webhook-id` header, the same for every endpoint and every attempt.
  event_id text not null,
  event_type text not null check (event_type in ('conversation.ended', 'conversation.analyzed', 'conversation.failed')),
  conversation_id text,
  body text not null,
  status text not null default 'pending' check (status in ('pending', 'succeeded', 'failed')),
  attempts integer not null default 0,
  response_status_code integer,
  error text,
  created_at timestamptz not null default now(),
  last_attempt_at timestamptz,
  delivered_at timestamptz,
  unique (endpoint_id, event_id)
);
-- The log of one endpoint, newest first (cursor pagination on created_at, id).
create index webhook_deliveries_endpoint on webhook_deliveries (endpoint_id, created_at desc, id desc);
