// Conversations: the record, its items and tool calls, extractions, and the queries of the conversation
// endpoints (GET /v1/conversations, /v1/conversations/{id}, /v1/conversations/{id}/extractions). Fields that may be
// null are `.nullable()`; fields a record may leave out are `.optional()`.
import { z } from 'zod';
import { lang as language } from './common.js';
import { backgroundNoise, dataRetentionPolicy, multilingualMode } from './agents.js';

/** A conversation's `origin`: where it came from. */
export const CONVERSATION_ORIGINS = [
  'web',
  'web-playground',
  'web-demo',
  'direct',
  'framework-agents-py',
  'framework-agents-js',
  'sdk-py',
  'sdk-js',
  'inbound',
  'telephony-inbound',
  'outbound',
  'telephony-outbound',
  'replay',
] as const;
export const conversationOrigin = z.enum(CONVERSATION_ORIGINS);

/** A conversation's `ended_by`, the terminal cause. */
export const ENDED_BY = [
  'user',
  'user_canceled',
  'user_validation_failed',
  'assistant',
  'assistant_silence_limit_reached',
  'configuration_endpoint_timed_out',
  'configuration_endpoint_error',
  'configuration_endpoint_invalid_response',
  'error',
] as const;
export const endedBy = z.enum(ENDED_BY);
export type EndedBy = z.infer<typeof endedBy>;

/** Formats of the signed `audio_url` (GET /v1/conversations/{id}, `audio_container`). */
export const AUDIO_CONTAINERS = ['wav.gz', 'wav'] as const;
export const audioContainer = z.enum(AUDIO_CONTAINERS);
export type AudioContainer = z.infer<typeof audioContainer>;

/** Sides of a conversation that a recording may hold; `both` is the one `audio_url` serves. */
export const RECORDING_SIDES = ['both', 'user', 'assistant'] as const;
export const recordingSide = z.enum(RECORDING_SIDES);
export type RecordingSide = z.infer<typeof recordingSide>;

const jsonMap = z.record(z.string(), z.unknown());

export const pronunciationItem = z.object({ word: z.string(), pronunciation: z.string() });

/** One tool call of an assistant item. */
export const toolCallEntry = z.object({
  id: z.string(),
  tool: z.object({ id: z.string(), name: z.string() }),
  request_body: z.unknown().nullable(),
  response_body: jsonMap.nullable(),
  timed_out: z.boolean().nullable(),
  error_message: z.string().nullable(),
  integration: z.string().nullable().optional(),
  endpoint_method: z.string().nullable().optional(),
  /** As called, with `url_path` placeholders filled. */
  endpoint_url: z.string().nullable().optional(),
  endpoint_headers: z.record(z.string(), z.string()).nullable().optional(),
  endpoint_timeout_ms: z.number().int().nullable().optional(),
  /** Null when the call failed before reaching the endpoint. */
  endpoint_called_at: z.string().nullable().optional(),
  query_params: z.record(z.string(), z.string()).nullable().optional(),
  response_status_code: z.number().int().nullable().optional(),
  tool_call_output_timeout_ms: z.number().int().nullable().optional(),
});
export type ToolCallEntry = z.infer<typeof toolCallEntry>;

/** One item of a conversation: one turn. */
export const conversationItem = z.object({
  id: z.string(),
  item_idx: z.number().int(),
  role: z.enum(['user', 'assistant']),
  /** Null when redacted. */
  live_transcript: z.string().nullable(),
  post_call_transcript: z.string().nullable(),
  duration_ms: z.number(),
  started_at: z.string(),
  redacted_transcript: z.string().nullable().optional(),
  voice_id: z.string().optional(),
  /** Assistant items only. */
  audio_speed: z.number().optional(),
  tool_calls: z.array(toolCallEntry).optional(),
  /** Deprecated: kept for clients that still read it. */
  system_prompt: z.string().optional(),
});
export type ConversationItem = z.infer<typeof conversationItem>;

/** `call_info`: phone metadata. */
export const callInfo = z.object({
  /** E.164, or `anonymous` when an inbound caller withheld the number. */
  from_phone_number: z.string(),
  to_phone_number: z.string(),
  /** Only for calls over a user's own SIP trunk. */
  telephony_call_sid: z.string().optional(),
});
export type CallInfo = z.infer<typeof callInfo>;

/**
 * One direction of a phone call's RTP audio (RFC 3550 6.4.1, A.3, A.8): packets expected (from the sequence numbers),
 * received and lost (expected - received: negative with duplicates), the loss fraction (lost / expected, 0 when
 * nothing was expected) and the interarrival jitter in ms. Parley's extension.
 */
export const rtpStreamStats = z.object({
  packets_expected: z.number().int(),
  packets_received: z.number().int(),
  packets_lost: z.number().int(),
  loss_fraction: z.number(),
  jitter_ms: z.number(),
});
export type RtpStreamStats = z.infer<typeof rtpStreamStats>;

/**
 * A phone call's RTP statistics: `inbound` as Parley received the caller's audio, `outbound` as the peer reported
 * Parley's audio in its last RTCP report (null when it sent none).
 */
export const rtpAnalysis = z.object({ inbound: rtpStreamStats, outbound: rtpStreamStats.nullable() });
export type RtpAnalysis = z.infer<typeof rtpAnalysis>;

export const analysis = z.object({
  id: z.string(),
  latencies_ms: z.array(z.number()),
  interruptions_count: z.number().int(),
  /** Phone calls only (Parley's extension). */
  rtp: rtpAnalysis.optional(),
});

export const deletionInfo = z.object({
  transcripts_deleted_at: z.string().nullable(),
  audio_recordings_deleted_at: z.string().nullable(),
});

/** Statuses of a post-call job (src/jobs/queue.ts). */
export const JOB_STATUSES = ['pending', 'running', 'done', 'failed', 'skipped'] as const;

/** One job of the work done after a conversation ends (Parley's addition to the record). */
export const postCallJob = z.object({
  /** `post_call_transcript`, `extraction`, `evaluation`, ... */
  kind: z.string(),
  status: z.enum(JOB_STATUSES),
  /** Why nothing was done (`skipped`), e.g. no model configured. */
  reason: z.string().optional(),
  /** The last attempt's error: `failed`, or `pending` again and to be retried. */
  error: z.string().optional(),
  attempts: z.number().int(),
  updated_at: z.string(),
});
export type PostCallJob = z.infer<typeof postCallJob>;

/** The record's `post_call`: its post-call jobs (none until the conversation has ended). */
export const postCall = z.object({ jobs: z.array(postCallJob) });

/**
 * One artifact of a conversation sent to its agent's external storage policy (Parley's addition): where it went and
 * how it ended, never its content. `error` says why it was not delivered.
 */
export const externalStorageDelivery = z.object({
  artifact: z.enum(['record', 'recording']),
  status: z.enum(['delivered', 'failed']),
  bucket: z.string(),
  key: z.string(),
  bytes: z.number().nullable(),
  error: z.string().optional(),
  finished_at: z.string(),
});
export type ExternalStorageDelivery = z.infer<typeof externalStorageDelivery>;

/** The record's `external_storage`: present once a delivery to the agent's policy has an outcome. */
export const externalStorage = z.object({ deliveries: z.array(externalStorageDelivery) });

/** The conversation record. */
export const conversation = z.object({
  id: z.string(),
  agent: z.object({ id: z.string(), name: z.string(), is_deleted: z.boolean() }).nullable(),
  /** Workspace name. */
  workspace: z.string(),
  project: z.object({ id: z.string(), name: z.string() }),
  external_id: z.string().nullable(),
  origin: conversationOrigin,
  model: z.string(),
  generate_welcome_message: z.boolean(),
  is_welcome_message_interruptible: z.boolean(),
  listen_only: z.boolean(),
  welcome_message: z.string().nullable(),
  template_variables: z.record(z.string(), z.string()),
  input_format: z.string(),
  output_format: z.string(),
  background_noise_level: z.number(),
  background_noise: backgroundNoise.nullable(),
  live_transcript: z.string().nullable(),
  post_call_transcript: z.string().nullable(),
  duration_ms: z.number(),
  audio_url: z.string().nullable(),
  started_at: z.string().nullable(),
  ended_at: z.string().nullable(),
  /** The terminal cause; null while the conversation is still in progress. */
  ended_by: endedBy.nullable(),
  boosted_keywords: z.array(z.string()).nullable(),
  pronunciation_dictionary: z.array(pronunciationItem),
  min_words_to_interrupt: z.number().int(),
  default_language: language,
  additional_languages: z.array(language).nullable(),
  multilingual_mode: multilingualMode,
  push_to_talk: z.boolean(),
  no_input_poke_sec: z.number().int().nullable(),
  no_input_end_conversation_sec: z.number().int().nullable(),
  no_input_poke_text: z.string().nullable(),
  task_results: jsonMap,
  items: z.array(conversationItem),
  call_info: callInfo.nullable(),
  analysis,
  system_prompt: z.string().nullable().optional(),
  generate_no_input_poke_text: z.boolean().nullable().optional(),
  websocket_timeout_sec: z.number().optional(),
  vad_prebuffer_duration_ms: z.number().nullable().optional(),
  vad_min_speech_duration_ms: z.number().nullable().optional(),
  vad_min_silence_duration_ms: z.number().nullable().optional(),
  vad_threshold: z.number().nullable().optional(),
  is_redacted: z.boolean().optional(),
  redacted_transcript: z.string().nullable().optional(),
  metadata: jsonMap.nullable().optional(),
  enable_watermarking: z.boolean().optional(),
  data_retention_policy: dataRetentionPolicy.optional(),
  deletion_info: deletionInfo.optional(),
  enable_assistant_backchannel: z.boolean().optional(),
  assistant_backchannel_aggressiveness: z.number().nullable().optional(),
  /** Deprecated: kept for clients that still read it. */
  languages: z.array(z.string()).optional(),
  /** Parley's addition: the post-call jobs (transcript, extraction, evaluations) and where they stand. */
  post_call: postCall.optional(),
  /** Parley's addition: what became of the artifacts sent to the agent's external storage policy. */
  external_storage: externalStorage.optional(),
});
export type Conversation = z.infer<typeof conversation>;

/** One extraction of a conversation. */
export const conversationExtraction = z.object({
  id: z.string(),
  schema: z.object({ id: z.string(), name: z.string(), isDeleted: z.boolean() }),
  result: jsonMap,
  created_at: z.string(),
});
export type ConversationExtraction = z.infer<typeof conversationExtraction>;

// ---- queries and responses of the endpoints ----

/** Page size of GET /v1/conversations: default and upper bound. */
export const LIST_LIMIT_DEFAULT = 20;
export const LIST_LIMIT_MAX = 100;

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;

/**
 * `started_at_min` / `started_at_max`: a date `YYYY-MM-DD` (UTC day) or a full ISO 8601 timestamp.
 * Parsed into the instant that bounds the range: a date's midnight for a minimum, the next midnight
 * (exclusive) for a maximum, so `started_at_max=2026-11-22` includes the whole of that day.
 */
export interface TimeBound {
  at: Date;
  /** Whether the bound itself is excluded (a date maximum). */
  exclusive: boolean;
}

function timeBound(kind: 'min' | 'max') {
  return z
    .string()
    .transform((value, ctx): TimeBound => {
      if (DATE_ONLY.test(value)) {
        const at = new Date(`${value}T00:00:00.000Z`);
        if (Number.isNaN(at.getTime()) || at.toISOString().slice(0, 10) !== value) {
          ctx.addIssue({ code: 'custom', message: `${value} is not a valid date (YYYY-MM-DD)` });
          return z.NEVER;
        }
        if (kind === 'min') return { at, exclusive: false };
        return { at: new Date(at.getTime() + 86_400_000), exclusive: true };
      }
      if (!z.iso.datetime({ offset: true }).safeParse(value).success) {
        ctx.addIssue({ code: 'custom', message: 'must be a date YYYY-MM-DD or an ISO 8601 timestamp' });
        return z.NEVER;
      }
      return { at: new Date(value), exclusive: false };
    })
    .meta({ description: 'date `YYYY-MM-DD` (UTC) or ISO 8601 timestamp' });
}

const durationSec = z.coerce.number().int().min(0);

/** Query of GET /v1/conversations/{id}. */
export const getConversationQuery = z.object({
  audio_container: audioContainer.default('wav.gz'),
});

/** Query of GET /v1/conversations. */
export const listConversationsQuery = z
  .object({
    project: z.string().min(1).default('main').describe('project name or id'),
    external_id: z
      .string()
      .min(1)
      .optional()
      .describe('client tracking id; exactly one match answers `{conversation}`'),
    duration_min: durationSec.optional().describe('minimum duration, whole seconds'),
    duration_max: durationSec.optional().describe('maximum duration, whole seconds (inclusive)'),
    started_at_min: timeBound('min').optional(),
    started_at_max: timeBound('max').optional(),
    before: z.string().min(1).optional().describe('cursor from `pagination.prev_cursor`: the newer page'),
    after: z.string().min(1).optional().describe('cursor from `pagination.next_cursor`: the older page'),
    limit: z.coerce
      .number()
      .int()
      .min(1)
      .max(LIST_LIMIT_MAX)
      .default(LIST_LIMIT_DEFAULT)
      .describe(`page size, at most ${LIST_LIMIT_MAX}`),
    audio_container: audioContainer.default('wav.gz'),
  })
  .superRefine((q, ctx) => {
    if (q.before !== undefined && q.after !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['before'], message: '`before` and `after` cannot be used together' });
    }
    if (q.duration_min !== undefined && q.duration_max !== undefined && q.duration_min > q.duration_max) {
      ctx.addIssue({ code: 'custom', path: ['duration_min'], message: 'must not exceed duration_max' });
    }
  });
export type ListConversationsQuery = z.infer<typeof listConversationsQuery>;

export const conversationIdParams = z.object({ id: z.string().min(1) });

export const pagination = z.object({ prev_cursor: z.string().nullable(), next_cursor: z.string().nullable() });

export const conversationResponse = z.object({ conversation });
export const conversationListing = z.object({ conversations: z.array(conversation), pagination });
export const listConversationsResponse = z.union([conversationListing, conversationResponse]);
export const extractionsResponse = z.object({ extractions: z.array(conversationExtraction) });
export const successResponse = z.object({ success: z.boolean() });
