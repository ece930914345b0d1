-- Core tables of the control plane (docs/CONTRACTS.md, "Control plane foundation").

create table organizations (
  id text primary key,
  name text not null unique,
  logo_url text,
  invite_link_allowed_domains jsonb not null default '[]'::jsonb,
  ip_allowlist jsonb not null default '[]'::jsonb,
  features jsonb not null default '{}'::jsonb,
  created_at timestamptz not null default now()
);

create table projects (
  id text primary key,
  org_id text not null references organizations(id) on delete cascade,
  name text not null,
  max_active_conversations integer,
  default_agent_id text,
  created_at timestamptz not null default now(),
  unique (org_id, name)
);

-- Secrets are stored only as SHA-256 hashes (hex); `secret_hint` is the last characters, for listings.
create table api_keys (
  id text primary key,
  org_id text not null references organizations(id) on delete cascade,
  name text not null,
  secret_hash text not null unique,
  secret_hint text not null,
  created_at timestamptz not null default now(),
  rotated_at timestamptz
);
create index api_keys_org on api_keys (org_id);

create table session_tokens (
  id text primary key,
  org_id text not null references organizations(id) on delete cascade,
  api_key_id text references api_keys(id) on delete cascade,
  token_hash text not null unique,
  conversation_ids jsonb,
  expires_at timestamptz not null,
  created_at timestamptz not null default now()
);
create index session_tokens_expires on session_tokens (expires_at);

create table eval_prompts (
  id text primary key,
  org_id text not null references organizations(id) on delete cascade,
  project_id text not null references projects(id) on delete cascade,
  name text not null,
  prompt text not null,
  created_at timestamptz not null default now()
);
create index eval_prompts_project on eval_prompts (project_id);

-- Deleted schemas stay (deleted_at set) so extractions made from them can report `isDeleted`.
create table extraction_schemas (
  id text primary key,
  org_id text not null references organizations(id) on delete cascade,
  project_id text not null references projects(id) on delete cascade,
  name text not null,
  prompt text not null,
  fields jsonb not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  deleted_at timestamptz
);
create unique index extraction_schemas_name on extraction_schemas (project_id, name) where deleted_at is null;

create table external_storage_policies (
  id text primary key,
  org_id text not null references organizations(id) on delete cascade,
  project_id text not null references projects(id) on delete cascade,
  name text not null,
  endpoint_url text not null,
  bucket text not null,
  region text,
  key_prefix text,
  addressing_style text not null default 'auto',
  access_key_id text not null,
  secret_access_key text not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (project_id, name)
);

-- Numbers `assign-automatically` draws from; org_id null means any workspace may draw it.
create table phone_number_inventory (
  number text primary key,
  org_id text references organizations(id) on delete cascade,
  created_at timestamptz not null default now()
);

create table settings (
  key text primary key,
  value text not null
);
