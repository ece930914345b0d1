-- Conversations in progress, for recovery (src/store/recovery.ts): every lease TTL a node looks for those no lease
-- keeps alive any more. Partial: only the rows not ended, so the index stays as small as what is live.
create index conversations_in_progress on conversations (created_at) where state <> 'ended';
