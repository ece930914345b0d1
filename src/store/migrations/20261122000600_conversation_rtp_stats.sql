-- A phone call's RTP statistics (the record's analysis.rtp, src/schemas/conversations.ts rtpAnalysis): the caller's
-- audio as received and Parley's as the peer reported it. Null for conversations that are not calls.
alter table conversations add column rtp_stats jsonb;
