// Every setting of a Parley node, validated once at start-up.
// Sources, later ones winning: defaults, an optional JSON config file (PARLEY_CONFIG_FILE), the environment.
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { cpus } from 'node:os';
import { z } from 'zod';

const port = z.coerce.number().int().min(0).max(65535);
const flag = z
  .enum(['0', '1', 'true', 'false', 'yes', 'no', 'on', 'off'])
  .transform((v) => v === '1' || v === 'true' || v === 'yes' || v === 'on');
const positiveInt = z.coerce.number().int().positive();
const optionalUrl = z.string().url().optional();

/** Environment variable name -> schema. Names are the documented setting names (README, "Settings"). */
export const settingsSchema = z.object({
  PARLEY_HOST: z.string().min(1).default('127.0.0.1'),
  PARLEY_HTTP_PORT: port.default(3000),
  PARLEY_WS_PORT: port.default(3001),
  PARLEY_SIP_PORT: port.default(5060),
  /** Address put in SDP c= and Contact (where peers send RTP and requests); default PARLEY_HOST. */
  PARLEY_SIP_PUBLIC_ADDRESS: z
    .string()
    .refine((v) => isIP(v) !== 0, 'must be an IPv4 or IPv6 address')
    .optional(),
  /** JSON file of SIP trunks (docs/telephony.md); unset: one implicit trunk trusting loopback callers only. */
  PARLEY_TRUNKS_FILE: z.string().min(1).optional(),
  /** Token bucket per source address of inbound INVITEs: refill per second and burst (503 + Retry-After past it). */
  PARLEY_SIP_INVITE_RATE_PER_SEC: z.coerce.number().positive().max(100_000).default(20),
  PARLEY_SIP_INVITE_BURST: positiveInt.max(1_000_000).default(40),
  /** Seconds an outbound call may ring unanswered before it is cancelled (409 no_answer). */
  PARLEY_RING_TIMEOUT_SEC: positiveInt.max(600).default(30),
  PARLEY_RTP_PORT_MIN: port.default(40000),
  PARLEY_RTP_PORT_MAX: port.default(49999),
  /** Seconds without RTP from a call's peer (while it is not on hold) before the call ends with ended_by error. */
  PARLEY_RTP_TIMEOUT_SEC: positiveInt.max(3600).default(30),
  PARLEY_DATA_DIR: z.string().min(1).default('./data'),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .optional(),
  PARLEY_BOOTSTRAP_API_KEY: z.string().min(20, 'must be at least 20 characters').optional(),
  PARLEY_ALLOW_PRIVATE_ENDPOINTS: flag.default(false),
  PARLEY_PUBLIC_URL: optionalUrl,
  /** Comma-separated addresses or CIDR ranges of proxies whose X-Forwarded-For is believed. */
  PARLEY_TRUSTED_PROXIES: z.string().default(''),
  PARLEY_WORKERS: positiveInt.max(256).default(cpus().length || 1),
  /**
   * Seconds a conversation whose STS socket dropped (without a deliberate close) waits for `?reconnect_conv_id=` before
   * it ends (ended_by user); the hosted STS API's clients reconnect within 30 s.
   */
  PARLEY_RECONNECT_GRACE_SEC: z.coerce.number().min(0).max(3600).default(30),
  /** Seconds a new STS socket may take to send its `config` before it is closed with 1008. */
  PARLEY_STS_CONFIG_TIMEOUT_SEC: z.coerce.number().positive().max(3600).default(10),
  PARLEY_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Secret for signed links (audio_url); generated and kept in the database when unset. */
  PARLEY_SIGNING_SECRET: z.string().min(16).optional(),
  PARLEY_MAX_ENABLED_AGENTS: positiveInt.default(100),
  PARLEY_WORKSPACE_MAX_ACTIVE_CONVERSATIONS: positiveInt.default(100),
  /** This node's name in conversation leases and heartbeats; default `<hostname>-<pid>`. */
  PARLEY_NODE_ID: z.string().min(1).max(200).optional(),
  /** Seconds a conversation lease lives without its node's heartbeat renewing it (a dead node frees capacity). */
  PARLEY_LEASE_TTL_SEC: positiveInt.max(3600).default(30),
  PARLEY_LLM_BASE_URL: optionalUrl,
  PARLEY_LLM_MODEL: z.string().min(1).optional(),
  PARLEY_LLM_API_KEY: z.string().min(1).optional(),
  PARLEY_RESPONSES_ENABLED: flag.optional(),
  PARLEY_WEB_SEARCH_URL: optionalUrl,
  /** Per request to the chat model: milliseconds before an attempt is abandoned, and retries on 429/5xx. */
  PARLEY_LLM_TIMEOUT_MS: positiveInt.default(30000),
  PARLEY_LLM_MAX_RETRIES: z.coerce.number().int().min(0).max(10).default(2),
  /** Upper bound of `num_responses` on POST /v1/responses. */
  PARLEY_RESPONSES_MAX: positiveInt.max(100).default(5),
  /** Token bucket per workspace for POST /v1/responses, shared by every node through the database. */
  PARLEY_RESPONSES_RATE_PER_MIN: positiveInt.default(60),
  PARLEY_RESPONSES_RATE_BURST: positiveInt.default(20),
  /** Comma-separated E.164 numbers that `assign-automatically` draws from (beside the admin-filled table). */
  PARLEY_PHONE_NUMBERS: z
    .string()
    .default('')
    .refine(
      (v) =>
        v
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean)
          .every((n) => /^\+[1-9]\d{1,14}$/.test(n)),
      'must be comma-separated E.164 numbers (e.g. +14155550100,+14155550101)',
    ),
  /** SIP URI of the outbound trunk (e.g. sip:carrier.example:5060); outbound calls need it. */
  PARLEY_OUTBOUND_TRUNK: z
    .string()
    .regex(/^sips?:/, 'must be a sip: URI')
    .optional(),
  /** JSON file: an array of voices replacing the shipped catalog (README, "Voices"). */
  PARLEY_VOICES_FILE: z.string().min(1).optional(),
  /** Speech engine of conversations whose agent names no `vendor_model` (README, "Speech engines"). */
  PARLEY_ENGINE_DEFAULT: z.enum(['echo', 'scripted', 'openai-realtime', 'cascade']).default('echo'),
  /** Per-`vendor_model` engine overrides; unset: the default engine. */
  PARLEY_ENGINE_VENDOR_V0_5: z.enum(['echo', 'scripted', 'openai-realtime', 'cascade']).optional(),
  PARLEY_ENGINE_VENDOR_V1: z.enum(['echo', 'scripted', 'openai-realtime', 'cascade']).optional(),
  PARLEY_ENGINE_VENDOR_V1_1: z.enum(['echo', 'scripted', 'openai-realtime', 'cascade']).optional(),
  /** JSON script of the `scripted` engine (README, "Speech engines"). */
  PARLEY_SCRIPTED_ENGINE_FILE: z.string().min(1).optional(),
  /** OpenAI Realtime WebSocket endpoint (e.g. wss://host/v1/realtime) of the `openai-realtime` engine. */
  PARLEY_REALTIME_URL: z
    .string()
    .regex(/^wss?:\/\//, 'must be a ws:// or wss:// URL')
    .optional(),
  PARLEY_REALTIME_API_KEY: z.string().min(1).optional(),
  PARLEY_REALTIME_MODEL: z.string().min(1).optional(),
  /** OpenAI-compatible speech-to-text and text-to-speech bases (ending in /v1) of the `cascade` engine. */
  PARLEY_STT_BASE_URL: optionalUrl,
  PARLEY_STT_MODEL: z.string().min(1).default('whisper-1'),
  PARLEY_STT_API_KEY: z.string().min(1).optional(),
  PARLEY_TTS_BASE_URL: optionalUrl,
  PARLEY_TTS_MODEL: z.string().min(1).default('tts-1'),
  PARLEY_TTS_API_KEY: z.string().min(1).optional(),
  /** Per request of the post-call transcript to PARLEY_STT_BASE_URL (a request carries minutes of audio). */
  PARLEY_POST_CALL_STT_TIMEOUT_MS: positiveInt.default(300_000),
  /** Jobs (post-call work) this node runs at once (src/jobs/queue.ts). */
  PARLEY_JOBS_CONCURRENCY: positiveInt.max(64).default(4),
  /** Milliseconds between looks for due jobs; a job enqueued by this node wakes its queue at once. */
  PARLEY_JOBS_POLL_MS: positiveInt.max(60_000).default(1000),
  /** Seconds a job's claim lives without its node's heartbeat (a node that died: another node runs the job). */
  PARLEY_JOBS_LEASE_SEC: positiveInt.max(3600).default(60),
  /** Attempts of a failing job (retried with exponential backoff and jitter) before it is parked as failed. */
  PARLEY_JOBS_MAX_ATTEMPTS: positiveInt.max(100).default(5),
  /**
   * Seconds a SIGTERM lets live conversations and calls finish on their own (nothing new admitted meanwhile) before
   * the rest are ended and saved (ended_by error); 0 ends them at once (docs/operations.md, "Drain").
   */
  PARLEY_DRAIN_TIMEOUT_SEC: z.coerce.number().int().min(0).max(86_400).default(30),
  /** Bearer token `/metrics` requires (docs/operations.md, "Metrics"); unset with no metrics port: metrics are off. */
  PARLEY_METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  /** A separate listener for `/metrics` only (address and port); unset: `/metrics` is on the control plane. */
  PARLEY_METRICS_HOST: z.string().min(1).optional(),
  PARLEY_METRICS_PORT: port.optional(),
  /** Seconds between retention sweeps (transcripts and recordings past their data_retention_policy). */
  PARLEY_RETENTION_SWEEP_SEC: positiveInt.max(86_400).default(60),
});

export type Settings = z.infer<typeof settingsSchema>;

/** A setting that cannot be used; start-up stops with its message. */
export class ConfigError extends Error {
  constructor(readonly problems: { setting: string; message: string }[]) {
    super(`invalid configuration: ${problems.map((p) => `${p.setting}: ${p.message}`).join('; ')}`);
    this.name = 'ConfigError';
  }
}

function readConfigFile(path: string): Record<string, string> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new ConfigError([
      { setting: 'PARLEY_CONFIG_FILE', message: `cannot read ${path}: ${(err as Error).message}` },
    ]);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ConfigError([{ setting: 'PARLEY_CONFIG_FILE', message: `${path} must hold a JSON object of settings` }]);
  }
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(parsed)) {
    if (!(k in settingsSchema.shape)) {
      throw new ConfigError([{ setting: k, message: `unknown setting in ${path}` }]);
    }
    out[k] = String(v);
  }
  return out;
}

/** Reads and validates every setting; throws ConfigError naming each bad one. */
export function loadSettings(env: NodeJS.ProcessEnv = process.env): Settings {
  const fromFile = env.PARLEY_CONFIG_FILE ? readConfigFile(env.PARLEY_CONFIG_FILE) : {};
  const raw: Record<string, string | undefined> = { ...fromFile };
  for (const key of Object.keys(settingsSchema.shape)) {
    const value = env[key];
    if (value !== undefined && value !== '') raw[key] = value;
  }
  const result = settingsSchema.safeParse(raw);
  if (!result.success) {
    throw new ConfigError(
      result.error.issues.map((issue) => ({ setting: String(issue.path[0] ?? 'config'), message: issue.message })),
    );
  }
  const s = result.data;
  if (s.PARLEY_RTP_PORT_MIN >= s.PARLEY_RTP_PORT_MAX) {
    throw new ConfigError([{ setting: 'PARLEY_RTP_PORT_MIN', message: 'must be below PARLEY_RTP_PORT_MAX' }]);
  }
  // RFC 3550 11: RTP on an even port, RTCP on the odd one above it; the range must hold one such pair.
  if (s.PARLEY_RTP_PORT_MIN % 2 === 1 && s.PARLEY_RTP_PORT_MIN + 1 >= s.PARLEY_RTP_PORT_MAX) {
    throw new ConfigError([
      { setting: 'PARLEY_RTP_PORT_MIN', message: 'the range must hold an even RTP port and the RTCP port above it' },
    ]);
  }
  if (s.PARLEY_METRICS_HOST !== undefined && s.PARLEY_METRICS_PORT === undefined) {
    throw new ConfigError([
      { setting: 'PARLEY_METRICS_HOST', message: "needs PARLEY_METRICS_PORT (the metrics listener's port)" },
    ]);
  }
  return s;
}

/** Whether `/metrics` is served at all: a token guards it, or a separate listener carries it (docs/operations.md). */
export function metricsExposed(settings: Pick<Settings, 'PARLEY_METRICS_TOKEN' | 'PARLEY_METRICS_PORT'>): boolean {
  return settings.PARLEY_METRICS_TOKEN !== undefined || settings.PARLEY_METRICS_PORT !== undefined;
}

/**
 * The node a conversation records as having run it (`conversations.node_id`): PARLEY_NODE_ID, or null for the
 * unnamed node. A node resumes the recording compressions of exactly these rows (src/workers/recording-resume.ts),
 * so the worker that writes it and the pool that resumes by it must agree: both ask here.
 */
export function conversationNodeId(settings: Pick<Settings, 'PARLEY_NODE_ID'>): string | null {
  return settings.PARLEY_NODE_ID ?? null;
}
