-- Conversations, complete from the start (the API's Conversation record): the live engine fills these, it does not migrate
-- them. Items, tool calls, extractions, recordings, the leases of the per-project concurrency cap, node heartbeats
-- and rate-limit buckets.

create table conversations (
  id text primary key,
  org_id text not null references organizations(id) on delete cascade,
  project_id text not null references projects(id) on delete cascade,
  -- The agent as it was when the conversation started; `agent.is_deleted` is computed on read.
  agent_id text,
  agent_name text,
  external_id text,
  origin text not null check (origin in ('web', 'web-playground', 'web-demo', 'direct', 'framework-agents-py',
    'framework-agents-js', 'sdk-py', 'sdk-js', 'inbound', 'telephony-inbound', 'outbound', 'telephony-outbound',
    'replay')),
  -- Lifecycle of the live engine: created -> configuring -> ready -> active -> ended.
  state text not null default 'created' check (state in ('created', 'configuring', 'ready', 'active', 'ended')),
  node_id text,
  model text not null,
  vendor_model text,
  intelligence_level text,
  generate_welcome_message boolean not null default false,
  is_welcome_message_interruptible boolean not null default true,
  listen_only boolean not null default false,
  welcome_message text,
  system_prompt text,
  template_variables jsonb not null default '{}'::jsonb,
  voice_id text,
  audio_speed double precision not null default 1,
  input_format text not null,
  output_format text not null,
  background_noise_level double precision not null default 0,
  background_noise text check (background_noise in ('office', 'call-center', 'coffee-shop')),
  live_transcript text,
  post_call_transcript text,
  redacted_transcript text,
  is_redacted boolean not null default false,
  enable_redaction boolean not null default false,
  duration_ms double precision not null default 0,
  created_at timestamptz not null default now(),
  started_at timestamptz,
  ended_at timestamptz,
  ended_by text check (ended_by in ('user', 'user_canceled', 'user_validation_failed', 'assistant',
    'assistant_silence_limit_reached', 'configuration_endpoint_timed_out', 'configuration_endpoint_error',
    'configuration_endpoint_invalid_response', 'error')),
  boosted_keywords jsonb,
  pronunciation_dictionary jsonb not null default '[]'::jsonb,
  min_words_to_interrupt integer not null default 1,
  default_language text not null default 'en',
  additional_languages jsonb,
  multilingual_mode text not null default 'request' check (multilingual_mode in ('auto', 'request', 'initial')),
  push_to_talk boolean not null default false,
  generate_no_input_poke_text boolean,
  no_input_poke_sec integer,
  no_input_poke_text text,
  no_input_end_conversation_sec integer,
  websocket_timeout_sec double precision,
  vad_prebuffer_duration_ms double precision,
  vad_min_speech_duration_ms double precision,
  vad_min_silence_duration_ms double precision,
  vad_threshold double precision,
  task_results jsonb not null default '{}'::jsonb,
  metadata jsonb,
  enable_watermarking boolean not null default false,
  data_retention_policy jsonb not null default '{"zero_data_retention": false, "transcripts": {"delete_after_hours": null}, "audio_recordings": {"delete_after_hours": null}}'::jsonb,
  enable_assistant_backchannel boolean not null default false,
  assistant_backchannel_aggressiveness double precision,
  languages jsonb,
  -- Tool names and the rest of the effective configuration the live engine runs with (agent plus overrides).
  tools jsonb not null default '[]'::jsonb,
  config jsonb not null default '{}'::jsonb,
  -- call_info (null columns for non-phone conversations).
  from_phone_number text,
  to_phone_number text,
  telephony_call_sid text,
  -- analysis
  analysis_id text not null,
  latencies_ms jsonb not null default '[]'::jsonb,
  interruptions_count integer not null default 0,
  -- deletion_info
  transcripts_deleted_at timestamptz,
  audio_recordings_deleted_at timestamptz,
  -- Order of listings: started_at, or the creation time while not started (stable cursor key).
  sort_at timestamptz generated always as (coalesce(started_at, created_at)) stored,
  check ((from_phone_number is null) = (to_phone_number is null))
);
-- Listing order and cursor pagination (sort_at desc, id desc) within a project, and the filters.
create index conversations_project_order on conversations (project_id, sort_at desc, id desc);
create index conversations_project_external on conversations (project_id, external_id) where external_id is not null;
create index conversations_project_duration on conversations (project_id, duration_ms);
create index conversations_org on conversations (org_id);
create index conversations_retention on conversations (ended_at) where ended_at is not null;

create table conversation_items (
  id text primary key,
  conversation_id text not null references conversations(id) on delete cascade,
  item_idx integer not null,
  role text not null check (role in ('user', 'assistant')),
  live_transcript text,
  post_call_transcript text,
  redacted_transcript text,
  duration_ms double precision not null default 0,
  started_at timestamptz not null,
  voice_id text,
  audio_speed double precision,
  system_prompt text,
  unique (conversation_id, item_idx)
);

create table conversation_tool_calls (
  id text primary key,
  conversation_id text not null references conversations(id) on delete cascade,
  item_id text not null references conversation_items(id) on delete cascade,
  call_idx integer not null,
  tool_id text not null,
  tool_name text not null,
  request_body jsonb,
  response_body jsonb,
  timed_out boolean,
  error_message text,
  integration text,
  endpoint_method text,
  endpoint_url text,
  endpoint_headers jsonb,
  endpoint_timeout_ms integer,
  endpoint_called_at timestamptz,
  query_params jsonb,
  response_status_code integer,
  tool_call_output_timeout_ms integer,
  unique (item_id, call_idx)
);
create index conversation_tool_calls_conversation on conversation_tool_calls (conversation_id);

-- Extractions keep the schema's name; `schema.isDeleted` comes from extraction_schemas.deleted_at.
create table conversation_extractions (
  id text primary key,
  conversation_id text not null references conversations(id) on delete cascade,
  schema_id text not null,
  schema_name text not null,
  result jsonb not null default '{}'::jsonb,
  created_at timestamptz not null default now()
);
create index conversation_extractions_conversation on conversation_extractions (conversation_id, created_at);

-- Audio files under PARLEY_DATA_DIR/recordings (path relative to it); `both` is the one audio_url serves.
create table conversation_recordings (
  conversation_id text not null references conversations(id) on delete cascade,
  side text not null check (side in ('both', 'user', 'assistant')),
  path text not null,
  format text not null check (format in ('wav', 'wav.gz')),
  sample_rate integer not null,
  channels integer not null,
  bytes bigint not null,
  created_at timestamptz not null default now(),
  primary key (conversation_id, side)
);

-- The per-project concurrency cap across nodes (docs/ARCHITECTURE.md): a live conversation holds a lease its
-- node renews; an expired lease no longer counts, so a node that dies frees its share.
create table conversation_leases (
  conversation_id text primary key,
  project_id text not null references projects(id) on delete cascade,
  node_id text not null,
  expires_at timestamptz not null,
  created_at timestamptz not null default now()
);
create index conversation_leases_project on conversation_leases (project_id, expires_at);
create index conversation_leases_node on conversation_leases (node_id);

create table node_heartbeats (
  node_id text primary key,
  started_at timestamptz not null default now(),
  heartbeat_at timestamptz not null default now()
);

-- Token buckets for rate limits shared across nodes (e.g. the responses API), keyed by what is limited.
create table rate_limit_buckets (
  key text primary key,
  tokens double precision not null,
  updated_at timestamptz not null default now()
);
