// The conversations this worker owns, and how sockets reach them: the first socket, a reconnecting one
// (within the grace period), observers, and sockets of other workers relayed through main. Transport-free:
// sockets arrive as FrameSinks; uWS stays in sts-server.ts.
import type { Auth } from '../auth/authenticate.js';
import type { ConversationOrigin, LiveConversation } from '../conversation/host.js';
import type { Logger } from '../log.js';
import { clientMessage, sessionMessage, type ConfigMessage } from '../schemas/sts.js';
import type { UrlRules } from '../schemas/common.js';
import type { RelayKind, WorkerNotice } from '../workers/worker-protocol.js';
import { DETACHED, type FrameSink } from './sink.js';
import { observerFeed, StsClient } from './sts-client.js';

/** RFC 6455 7.4.1 / 7.4.2: 1008 policy violation; 4000-4999 application codes. */
export const CLOSE_POLICY = 1008;
export const CLOSE_NOT_LIVE = 4404;
export const CLOSE_REPLACED = 4409;

export interface LiveEntry {
  id: string;
  orgId: string;
  conv: LiveConversation;
  client: StsClient;
  grace: NodeJS.Timeout | null;
}

/** One socket's view of the conversation it talks to (null until `config` made one). */
export interface Attachment {
  entry: LiveEntry | null;
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
  post(notice: WorkerNotice): void;
  newConversation(client: StsClient, origin: ConversationOrigin): LiveConversation;
  log: Logger;
}

function errorEvent(message: string, code: string, paramErrors?: Record<string, string>): string {
  return JSON.stringify({ type: 'error', error: { message, code }, ...(paramErrors ? { param_errors: paramErrors } : {}) });
}

/** The attachment's client has its config (its own or, on a reconnect, the conversation's): frames go to `conv`. */
function configured(att: Attachment): void {
  att.configured = true;
  att.binaryTo = att.client!.binaryAudio ? att.conv : null;
}

export function newAttachment(): Attachment {
  return { entry: null, conv: null, client: null, configured: false, unobserve: null, binaryTo: null };
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

  /** A new STS socket: the conversation is made when its `config` arrives. */
  open(att: Attachment, sink: FrameSink, auth: Auth, origin: ConversationOrigin['origin']): void {
    const client = new StsClient(sink, {
      onEvent: (event) => {
        if (event.type === 'conversation_created') this.register(event.conversation_id, auth.orgId, att);
      },
    });
    att.client = client;
    att.conv = this.opts.newConversation(client, { orgId: auth.orgId, origin });
  }

  private register(id: string, orgId: string, att: Attachment): void {
    const entry: LiveEntry = { id, orgId, conv: att.conv!, client: att.client!, grace: null };
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
    if (binary) return void sink.text(errorEvent('binary frames need binary_audio: true in config', 'binary_not_negotiated'));
    let json: unknown;
    try {
      json = JSON.parse(typeof data === 'string' ? data : Buffer.from(data).toString('utf8'));
    } catch {
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
      const config = parsed.data as ConfigMessage;
      att.client!.binaryAudio = config.binary_audio === true;
      configured(att);
      void conv.start({ kind: 'config', config });
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

  /** The client's socket went away: a live conversation waits the grace period for a reconnect. */
  dropped(att: Attachment, sink: FrameSink): void {
    att.unobserve?.();
    att.unobserve = null;
    const conv = att.conv;
    if (!conv || !att.client || att.client.current !== sink) return;
    const entry = att.entry;
    if (!entry) return void conv.clientGone(); // still configuring: nothing to resume
    att.client.attach(DETACHED);
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
      sink.end(CLOSE_NOT_LIVE, 'conversation not live');
      return true;
    }
    if (entry.grace) clearTimeout(entry.grace);
    entry.grace = null;
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
    if (!ok) return void sink.end(CLOSE_NOT_LIVE, 'conversation not live');
    this.owned.set(relayId, { att, sink });
  }

  relayData(relayId: number, data: ArrayBuffer | string, binary: boolean): void {
    const r = this.owned.get(relayId);
    if (r) this.message(r.att, r.sink, data, binary);
  }

  relayClosed(relayId: number): void {
    const r = this.owned.get(relayId);
    if (!r) return;
    this.owned.delete(relayId);
    this.dropped(r.att, r.sink);
  }

  /** Shutdown: every live conversation ends and is saved, within graceMs. */
  async endAll(graceMs: number): Promise<void> {
    const all = [...this.live.values()].map((e) => {
      if (e.grace) clearTimeout(e.grace);
      return e.conv.end('error');
    });
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled(all), new Promise((r) => (timer = setTimeout(r, graceMs)))]);
    clearTimeout(timer);
  }
}
