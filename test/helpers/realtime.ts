// Test harness for the realtime side: a control plane on PostgreSQL (startTestServer) plus the media workers
// (src/workers/worker-pool.ts) on a port of their own, and a small `ws` client that records what it receives.
import WebSocket from 'ws';
import type { Settings } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { startWorkerPool, type WorkerPool } from '../../src/workers/worker-pool.js';
import { api, startTestServer, type TestServer } from './server.js';
import { until } from './wait.js';

function realtimeLogLevel(level: Settings['PARLEY_LOG_LEVEL']): Settings['PARLEY_LOG_LEVEL'] {
  return level === 'silent' ? 'error' : level;
}

export interface RealtimeServer extends TestServer {
  pool: WorkerPool;
  /** ws://127.0.0.1:<port> of the realtime port. */
  wsUrl: string;
  /** The STS socket's URL (docs/sts-protocol.md). */
  stsUrl: string;
  /** Upgrade headers carrying the bootstrap API key. */
  auth: Record<string, string>;
  /** A client of the STS socket opened with the API key; `query` is appended (e.g. `?reconnect_conv_id=...`). */
  openSts(query?: string): Promise<TestClient>;
  /** A conversation: the STS socket opened, `{ type: 'config', ...config }` sent, ready_to_start_conversation seen. */
  startConversation(config: Record<string, unknown>): Promise<{ client: TestClient; id: string }>;
  /** The URL of a conversation's observer socket (`/v1/conversations/{id}/live/ws`). */
  liveUrl(id: string): string;
  /** The conversation's record once it has ended (GET /v1/conversations/{id}, polled). */
  endedConversation(id: string): Promise<any>;
}

/** Polls of a conversation's record until it ends: the reconnect grace and the save take seconds. */
const ENDED_TIMEOUT_MS = 30_000;
const ENDED_POLL_MS = 100;

export async function startRealtimeServer(
  opts: { workers?: number; env?: Record<string, string> } = {},
): Promise<RealtimeServer> {
  const server = await startTestServer({ db: 'postgres', env: { PARLEY_WS_PORT: '0', ...opts.env } });
  let pool: WorkerPool;
  try {
    pool = await startWorkerPool({
      // Errors of the realtime side show in the test output (a failing test then says why); the rest is quiet.
      settings: {
        ...server.settings,
        PARLEY_HOST: '127.0.0.1',
        PARLEY_WS_PORT: 0,
        PARLEY_LOG_LEVEL: realtimeLogLevel(server.settings.PARLEY_LOG_LEVEL),
      },
      sql: server.sql,
      log: createLogger(realtimeLogLevel(server.settings.PARLEY_LOG_LEVEL)),
      workers: opts.workers ?? 1,
    });
  } catch (err) {
    await server.close();
    throw err;
  }
  const wsUrl = `ws://127.0.0.1:${pool.port}`;
  const stsUrl = `${wsUrl}/v1/sts/ws`;
  const auth = { authorization: `Bearer ${server.apiKey}` };
  const http = api(server);
  const openSts = (query = '') => TestClient.open(`${stsUrl}${query}`, auth);
  return {
    ...server,
    pool,
    wsUrl,
    stsUrl,
    auth,
    openSts,
    async startConversation(config) {
      const client = await openSts();
      client.send({ type: 'config', ...config });
      await client.untilEvent('ready_to_start_conversation');
      const id = client.events('conversation_created')[0]?.conversation_id;
      if (typeof id !== 'string') throw new Error(`no conversation: ${JSON.stringify(client.got.events)}`);
      return { client, id };
    },
    liveUrl: (id) => `${wsUrl}/v1/conversations/${id}/live/ws`,
    endedConversation: (id) => endedConversation((path) => http.get(path), id),
    close: async () => {
      try {
        await pool.close();
      } finally {
        await server.close();
      }
    },
  };
}

export interface Received {
  events: Record<string, unknown>[];
  binary: Buffer[];
  /** Every frame in arrival order: the event type, or 'binary'. */
  order: string[];
}

/** A connected test client: everything it receives, and waits on what it is waiting for. */
export class TestClient {
  readonly got: Received = { events: [], binary: [], order: [] };

  closed: Promise<{ code: number; reason: string }>;
  private waiters: { test: () => boolean; resolve: () => void }[] = [];

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (isBinary) {
        this.got.binary.push(data);
        this.got.order.push('binary');
      } else {
        const event = JSON.parse(data.toString('utf8')) as Record<string, unknown>;
        this.got.events.push(event);
        this.got.order.push(String(event.type));
      }
      this.check();
    });
    this.closed = new Promise((resolve) =>
      ws.on('close', (code, reason) => {
        resolve({ code, reason: reason.toString() });
        this.check();
      }),
    );
  }

  /** Opens a socket; rejects with the HTTP status when the upgrade is refused. */
  static open(url: string, headers: Record<string, string> = {}): Promise<TestClient> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, { headers });
      const client = new TestClient(ws);
      ws.once('open', () => resolve(client));
      ws.once('unexpected-response', (_req, res) =>
        reject(Object.assign(new Error(`upgrade refused: ${res.statusCode}`), { status: res.statusCode })),
      );
      ws.once('error', reject);
    });
  }

  send(message: Record<string, unknown>): void {
    this.ws.send(JSON.stringify(message));
  }

  events(type: string): Record<string, unknown>[] {
    return this.got.events.filter((e) => e.type === type);
  }

  private check(): void {
    this.waiters = this.waiters.filter((w) => {
      if (!w.test()) return true;
      w.resolve();
      return false;
    });
  }

  /** Resolves once `test` holds (checked on every frame and on close). */
  until(test: () => boolean): Promise<void> {
    if (test()) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ test, resolve }));
  }

  untilEvent(type: string, count = 1): Promise<void> {
    return this.until(() => this.events(type).length >= count || this.ws.readyState === WebSocket.CLOSED);
  }

  close(): void {
    this.ws.close();
  }
}

/** 20 ms frames, the chunk docs/sts-protocol.md recommends. */
export const FRAME_MS = 20;

/** 16-bit mono PCM of a WAV file's data chunk (the Allison prompts are 8 kHz mono). */
export function wavPcm(wav: Buffer): Int16Array {
  let off = 12;
  while (off + 8 <= wav.length) {
    const id = wav.toString('ascii', off, off + 4);
    const size = wav.readUInt32LE(off + 4);
    if (id === 'data') {
      const bytes = wav.subarray(off + 8, off + 8 + size);
      return new Int16Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + (bytes.length & ~1)));
    }
    off += 8 + size + (size & 1);
  }
  throw new Error('no data chunk in WAV');
}

/**
 * Streams `pcm` to the socket in 20 ms frames at real time (deadline pacing, no drift), as base64 audio_chunk
 * messages or as binary frames. `keepGoing` extends the stream with silence frames while it returns true.
 */
export async function streamAudio(
  client: TestClient,
  pcm: Int16Array,
  rate: number,
  opts: { binary?: boolean; keepGoing?: () => boolean } = {},
): Promise<number> {
  const perFrame = (rate * FRAME_MS) / 1000;
  const silence = new Int16Array(perFrame);
  const start = performance.now();
  let sent = 0;
  for (let i = 0; ; i++) {
    const off = i * perFrame;
    const frame =
      off < pcm.length ? pcm.subarray(off, Math.min(off + perFrame, pcm.length)) : opts.keepGoing?.() ? silence : null;
    if (!frame || client.ws.readyState !== WebSocket.OPEN) break;
    const bytes = Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength);
    if (opts.binary) client.ws.send(bytes, { binary: true });
    else client.send({ type: 'audio_chunk', audio: bytes.toString('base64') });
    sent++;
    const wait = start + (i + 1) * FRAME_MS - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }
  return sent;
}

/**
 * The conversation `id` once its record has ended, read through `get` (an API client of the node that holds it):
 * polled every ENDED_POLL_MS for up to `timeoutMs`.
 */
export async function endedConversation(
  get: (path: string) => Promise<{ status: number; body: any }>,
  id: string,
  timeoutMs = ENDED_TIMEOUT_MS,
): Promise<any> {
  let ended: any = null;
  await until(
    async () => {
      const res = await get(`/v1/conversations/${id}`);
      if (res.status === 200 && res.body.conversation.ended_by) ended = res.body.conversation;
      return ended !== null;
    },
    { what: `conversation ${id} to end`, timeoutMs, intervalMs: ENDED_POLL_MS },
  );
  return ended;
}

/** The HTTP status that refused an upgrade, or 101 when the socket opened (it is closed again at once). */
export async function upgradeStatus(url: string, headers: Record<string, string> = {}): Promise<number> {
  try {
    const c = await TestClient.open(url, headers);
    c.close();
    await c.closed;
    return 101;
  } catch (err) {
    const status = (err as { status?: number }).status;
    if (status === undefined) throw err;
    return status;
  }
}
