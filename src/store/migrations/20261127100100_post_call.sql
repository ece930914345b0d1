-- The post-call pipeline's data (src/jobs/): the words of the post-call transcript with their times (for
-- redaction), the tasks a conversation is judged on, and the indexes of the retention sweep.

-- Words of the second pass: every word of both sides [{role, word, start_ms, end_ms, item_id}], times in ms from
-- the start of the recording, item_id the item whose time span holds it (null for none). Content: dropped with the
-- transcripts (zero data retention, deletion, retention: src/store/conversations.ts itemsContentDropped). A table
-- of its own, so reading a record never reads them.
create table conversation_post_call_words (
  conversation_id text primary key references conversations(id) on delete cascade,
  words jsonb not null,
  created_at timestamptz not null default now()
);

-- The agent's `tasks` ([{name, description}]) as the conversation started with them: judged after it ends.
alter table conversations add column tasks jsonb not null default '[]'::jsonb;

-- Ended conversations whose transcripts / recordings have a retention period and are not yet deleted: the
-- sweep's candidates (src/store/post-call.ts).
create index conversations_transcripts_retention on conversations (ended_at)
  where transcripts_deleted_at is null and ended_at is not null
    and (data_retention_policy -> 'transcripts' ->> 'delete_after_hours') is not null;
create index conversations_audio_retention on conversations (ended_at)
  where audio_recordings_deleted_at is null and ended_at is not null
    and (data_retention_policy -> 'audio_recordings' ->> 'delete_after_hours') is not null;
