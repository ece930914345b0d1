// The conversations this worker owns, and how sockets reach them: the first socket, a reconnecting one
// (within the grace period), observers, and sockets of other workers relayed through main. Transport-free:
// sockets arrive as FrameSinks; uWS stays in sts-server.ts.
import type { Auth } from '../auth/authenticate.js';
import type { ConversationOrigin, LiveConversation } from '../conversation/host.js';
import type { Logger } from '../log.js';
import { clientMessage, sessionMessage } from '../schemas/sts.js';
import type { UrlRules } from '../schemas/common.js';
import type { RelayKind, WorkerNotice } from '../workers/worker-protocol.js';
import { DETACHED, type FrameSink } from './sink.js';
import { observerFeed, StsClient } from './sts-client.js';

/**
 * Close codes (docs/sts-protocol.md, "Closing"). RFC 6455 7.4.1: 1008 policy violation; 7.4.2: 4000-4999 are the
 * application's. 4800 and 4801 are the hosted STS API's (its clients stop reconnecting on them): a reconnect that
 * came too late (the conversation is not live), and one that is invalid (another workspace's conversation).
 */
export const CLOSE_POLICY = 1008;
export const CLOSE_SESSION_EXPIRED = 4800;
export const CLOSE_INVALID_STATE = 4801;
/** Observer sockets: the conversation is not live here. */
export const CLOSE_NOT_LIVE = 4404;
export const CLOSE_REPLACED = 4409;
/** RFC 6455 7.4.1 / IANA: 1012 service restart; with reason RESTARTING, the client reconnects (docs/sts-protocol.md). */
export const CLOSE_RESTARTING = 1012;
export const RESTARTING = 'restarting';

/**
 * Close codes a client ends its conversation with on purpose (RFC 6455 7.4.1): 1000 normal, 1001 going away, and
 * 1005, which stands for a close frame without a code (a browser's `ws.close()`). Any other code, or none (1006: the
 * connection dropped), waits the reconnect grace.
 */
const DELIBERATE_CLOSES: ReadonlySet<number> = new Set([1000, 1001, 1005]);

/** How long a new STS socket may take to send `config` (PARLEY_STS_CONFIG_TIMEOUT_SEC's default). */
export const CONFIG_TIMEOUT_MS = 10_000;

export interface LiveEntry {
  id: string;
  orgId: string;
  origin: ConversationOrigin['origin'];
  conv: LiveConversation;
  client: StsClient;
  grace: NodeJS.Timeout | null;
}

/** One socket's view of the conversation it talks to (null until `config` made one). */
export interface Attachment {
  entry: LiveEntry | null;
  /** Closes a socket that sends no `config` in time (LiveHostOptions.configTimeoutMs); null once configured. */
  configTimer: NodeJS.Timeout | null;
  conv: LiveConversation | null;
  client: StsClient | null;
  /** Messages before `config` and after it are told apart by this. */
  configured: boolean;
  unobserve: (() => void) | null;
  /**
   * Where the client's binary frames go once its config negotiated binary audio (null before, or without it): the
   * per-frame path then reads the attachment alone, not the client too.
   */
  binaryTo: LiveConversation | null;
}

export interface LiveHostOptions {
  workerId: number;
  rules: UrlRules;
  reconnectGraceMs: number;
  /** A new STS socket that has not sent `config` within this is closed with 1008 (CONFIG_TIMEOUT_MS by default). */
  configTimeoutMs?: number;
  post(notice: WorkerNotice): void;
  newConversation(client: StsClient, origin: ConversationOrigin): LiveConversation;
  log: Logger;
}

function errorEvent(message: string, code: string, paramErrors?: Record<string, string>): string {
  return JSON.stringify({
    type: 'error',
    error: { message, code },
    ...(paramErrors ? { param_errors: paramErrors } : {}),
  });
}

/** The attachment's client has its config (its own or, on a reconnect, the conversation's): frames go to `conv`. */
function configured(att: Attachment): void {
  stopConfigTimer(att);
  att.configured = true;
  att.binaryTo = att.client!.binaryAudio ? att.conv : null;
}

function stopConfigTimer(att: Attachment): void {
  if (att.configTimer === null) return;
  clearTimeout(att.configTimer);
  att.configTimer = null;
}

export function newAttachment(): Attachment {
  return {
    entry: null,
    configTimer: null,
    conv: null,
    client: null,
    configured: false,
    unobserve: null,
    binaryTo: null,
  };
}

export class LiveHost {
  readonly live = new Map<string, LiveEntry>();
  /** Relays whose owner side is here: relayId -> the attachment of the remote socket. */
  private readonly owned = new Map<number, { att: Attachment; sink: FrameSink }>();
  private readonly configSchema;

  constructor(private readonly opts: LiveHostOptions) {
    this.configSchema = clientMessage(opts.rules);
  }

  get count(): number {
    return this.live.size;
  }

  /** Conversations whose `config` arrived and whose start has not settled yet (they may not be in `live` yet). */
  starting = 0;

  /** Metrics: the live conversations by origin, added into `out`. */
  countByOrigin(out: Record<string, number>): void {
    for (const e of this.live.values()) out[e.origin] = (out[e.origin] ?? 0) + 1;
  }

  /** A new STS socket: the conversation is made when its `config` arrives. */
  open(att: Attachment, sink: FrameSink, auth: Auth, origin: ConversationOrigin['origin']): void {
    const client = new StsClient(sink, {
      onEvent: (event) => {
        if (event.type === 'conversation_created') this.register(event.conversation_id, auth.orgId, origin, att);
      },
    });
    att.client = client;
    att.conv = this.opts.newConversation(client, { orgId: auth.orgId, origin });
    const timeoutMs = this.opts.configTimeoutMs ?? CONFIG_TIMEOUT_MS;
    att.configTimer = setTimeout(() => {
      att.configTimer = null;
      if (att.configured) return;
      sink.text(errorEvent(`no config within ${timeoutMs} ms of connecting`, 'config_timeout'));
      sink.end(CLOSE_POLICY, 'config timeout');
    }, timeoutMs);
  }

  private register(id: string, orgId: string, origin: ConversationOrigin['origin'], att: Attachment): void {
    const entry: LiveEntry = { id, orgId, origin, conv: att.conv!, client: att.client!, grace: null };
    att.entry = entry;
    this.live.set(id, entry);
    this.opts.post({ type: 'conversation_opened', workerId: this.opts.workerId, conversationId: id, orgId });
    this.opts.post({ type: 'load', workerId: this.opts.workerId, conversations: this.live.size });
    void entry.conv.ended.then(() => {
      if (entry.grace) clearTimeout(entry.grace);
      this.live.delete(id);
      this.opts.post({ type: 'conversation_closed', workerId: this.opts.workerId, conversationId: id });
      this.opts.post({ type: 'load', workerId: this.opts.workerId, conversations: this.live.size });
    });
  }

  /** A text or binary frame from the client of `att` (local socket or relayed). */
  message(att: Attachment, sink: FrameSink, data: ArrayBuffer | string, binary: boolean): void {
    const audioTo = att.binaryTo;
    if (binary && audioTo !== null) return audioTo.pushAudioFrame(data as ArrayBuffer);
    const conv = att.conv;
    if (!conv) return void sink.end(CLOSE_POLICY, 'no conversation');
    // Not negotiated (binaryTo would have taken it above).
    if (binary)
      return void sink.text(errorEvent('binary frames need binary_audio: true in config', 'binary_not_negotiated'));
    let json: unknown;
    try {
      json = JSON.parse(typeof data === 'string' ? data : Buffer.from(data).toString('utf8'));
    } catch {
      if (!att.configured) {
        // The first message must be a valid config (docs/sts-protocol.md, "Frames").
        sink.text(
          errorEvent(
            'the first message must be a valid config: a text frame must hold one JSON message',
            'invalid_config',
          ),
        );
        sink.end(CLOSE_POLICY, 'invalid config');
        return;
      }
      sink.text(errorEvent('a text frame must hold one JSON message', 'invalid_json'));
      return;
    }
    if (!att.configured) {
      const parsed = this.configSchema.safeParse(json);
      if (!parsed.success || parsed.data.type !== 'config') {
        const paramErrors: Record<string, string> = {};
        if (!parsed.success) for (const i of parsed.error.issues) paramErrors[i.path.join('.')] = i.message;
        sink.text(errorEvent('the first message must be a valid config', 'invalid_config', paramErrors));
        sink.end(CLOSE_POLICY, 'invalid config');
        return;
      }
      const config = parsed.data;
      att.client!.binaryAudio = config.binary_audio === true;
      configured(att);
      this.starting++;
      const started = () => {
        this.starting--;
        this.opts.post({ type: 'load', workerId: this.opts.workerId, conversations: this.live.size });
      };
      conv.start({ kind: 'config', config }).then(started, started);
      return;
    }
    const parsed = sessionMessage.safeParse(json);
    if (!parsed.success) {
      const paramErrors: Record<string, string> = {};
      for (const i of parsed.error.issues) paramErrors[i.path.join('.')] = i.message;
      sink.text(errorEvent('invalid message', 'invalid_message', paramErrors));
      return;
    }
    conv.handle(parsed.data);
  }

  /**
   * The client's socket went away, closed with `code` (its close frame's, 1005 for one without a code, 1006 for
   * none): a deliberate close (DELIBERATE_CLOSES) ends the conversation at once; otherwise a live conversation waits
   * the grace period for a reconnect, and ends (at the time the client left) when none comes.
   */
  dropped(att: Attachment, sink: FrameSink, code: number): void {
    stopConfigTimer(att);
    att.unobserve?.();
    att.unobserve = null;
    const conv = att.conv;
    if (!conv || !att.client || att.client.current !== sink) return;
    const entry = att.entry;
    if (!entry) return void conv.clientGone(); // still configuring: nothing to resume
    att.client.attach(DETACHED);
    if (DELIBERATE_CLOSES.has(code)) return void conv.clientGone();
    conv.clientDropped();
    if (entry.grace) clearTimeout(entry.grace);
    entry.grace = setTimeout(() => {
      entry.grace = null;
      conv.clientGone();
    }, this.opts.reconnectGraceMs);
  }

  /** `?reconnect_conv_id=` on this worker; false when the conversation is not live here. */
  reconnect(att: Attachment, sink: FrameSink, auth: Auth, id: string): boolean {
    const entry = this.live.get(id);
    if (!entry) return false;
    if (entry.orgId !== auth.orgId) {
      sink.end(CLOSE_INVALID_STATE, 'the conversation belongs to another workspace');
      return true;
    }
    if (entry.grace) clearTimeout(entry.grace);
    entry.grace = null;
    entry.conv.clientReturned();
    const previous = entry.client.current;
    entry.client.attach(sink);
    if (!previous.closed) previous.end(CLOSE_REPLACED, 'replaced by a reconnecting socket');
    att.entry = entry;
    att.conv = entry.conv;
    att.client = entry.client;
    configured(att);
    sink.text(JSON.stringify({ type: 'conversation_created', conversation_id: id }));
    return true;
  }

  /** An observer socket on this worker; false when the conversation is not live here. */
  observe(att: Attachment, sink: FrameSink, auth: Auth, id: string): boolean {
    const entry = this.live.get(id);
    if (!entry) return false;
    if (entry.orgId !== auth.orgId) {
      sink.end(CLOSE_NOT_LIVE, 'conversation not live');
      return true;
    }
    att.unobserve = entry.conv.observe(observerFeed(sink));
    return true;
  }

  // ---- relays: this worker owns the conversation, the socket is on another ----

  relayOpen(relayId: number, kind: RelayKind, auth: Auth, id: string, sink: FrameSink): void {
    const att = newAttachment();
    const ok = kind === 'observer' ? this.observe(att, sink, auth, id) : this.reconnect(att, sink, auth, id);
    if (!ok)
      return void sink.end(kind === 'observer' ? CLOSE_NOT_LIVE : CLOSE_SESSION_EXPIRED, 'conversation not live');
    this.owned.set(relayId, { att, sink });
  }

  relayData(relayId: number, data: ArrayBuffer | string, binary: boolean): void {
    const r = this.owned.get(relayId);
    if (r) this.message(r.att, r.sink, data, binary);
  }

  /** The relayed socket closed (with the client's close code) or its worker went away (4410). */
  relayClosed(relayId: number, code: number): void {
    const r = this.owned.get(relayId);
    if (!r) return;
    this.owned.delete(relayId);
    this.dropped(r.att, r.sink, code);
  }

  /**
   * `POST /v1/conversations/{id}/cancel` (main found this worker the owner): the conversation ends now,
   * `user_canceled` (the record's ending stands: the cancel wrote it first), and its socket closes. false when it is
   * not live here.
   */
  cancel(id: string): boolean {
    const entry = this.live.get(id);
    if (!entry) return false;
    void entry.conv.end('user_canceled');
    return true;
  }

  /**
   * Shutdown: every live conversation ends and is saved, within graceMs; its socket closes with 1012 `restarting`
   * (the client may reconnect to a node that runs).
   */
  async endAll(graceMs: number): Promise<void> {
    const all = [...this.live.values()].map((e) => {
      if (e.grace) clearTimeout(e.grace);
      return e.conv.end('error', { code: CLOSE_RESTARTING, reason: RESTARTING });
    });
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled(all), new Promise((r) => (timer = setTimeout(r, graceMs)))]);
    clearTimeout(timer);
  }
}
