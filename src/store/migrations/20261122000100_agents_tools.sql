-- Agents with their version history, the phone numbers assigned to them, and tools (docs/CONTRACTS.md).

-- `config` holds every writable field of the agent except name, slug and phone numbers, validated by
-- src/schemas/agents.ts (the single source of truth for their shapes); `version` goes up by one per change.
create table agents (
  id text primary key,
  org_id text not null references organizations(id) on delete cascade,
  project_id text not null references projects(id) on delete cascade,
  name text not null,
  slug text,
  enabled boolean not null default true,
  version integer not null default 1,
  config jsonb not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (project_id, name)
);
create unique index agents_slug on agents (project_id, slug) where slug is not null;
create index agents_org_enabled on agents (org_id) where enabled;

-- Every version of every agent as it was written: the row as of `version`, with its phone numbers.
create table agent_versions (
  agent_id text not null references agents(id) on delete cascade,
  version integer not null,
  name text not null,
  slug text,
  enabled boolean not null,
  config jsonb not null,
  phone_numbers jsonb not null,
  created_at timestamptz not null default now(),
  primary key (agent_id, version)
);

-- A number belongs to at most one agent (primary key). `kind`: drawn by assign-automatically, or custom.
create table agent_phone_numbers (
  number text primary key,
  agent_id text not null references agents(id) on delete cascade,
  org_id text not null references organizations(id) on delete cascade,
  kind text not null check (kind in ('auto', 'custom')),
  configuration_endpoint jsonb,
  created_at timestamptz not null default now()
);
create index agent_phone_numbers_agent on agent_phone_numbers (agent_id);

-- `definition` is the tool as created (src/schemas/tools.ts); names are unique within the organization.
create table tools (
  id text primary key,
  org_id text not null references organizations(id) on delete cascade,
  project_id text not null references projects(id) on delete cascade,
  name text not null,
  type text not null,
  definition jsonb not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (org_id, name)
);
create index tools_project on tools (project_id);
