// A whole Parley node in one process for end-to-end call tests: the control plane on a fresh PostgreSQL database
// (test/helpers/server.ts), the SIP service on port 0, and a media worker's call side (WorkerCalls, real
// conversations with the scripted engine, the real pacing clock and RTP sockets) in this thread, its store requests
// answered by main's own request handler. Every engine session's calls are logged in order (`engineLog`), so a test
// can see what the conversation told the engine and when it spoke.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Conversation } from '../../src/conversation/conversation.js';
import type { ConversationClient, ConversationOrigin, ConversationTimers } from '../../src/conversation/host.js';
import type { SpeechEngine } from '../../src/engines/engine.js';
import { createLocalTts } from '../../src/engines/local-tts.js';
import { createScriptedEngine, type EngineScript } from '../../src/engines/scripted.js';
import { createLogger } from '../../src/log.js';
import { PacingClock } from '../../src/media/pacing-clock.js';
import { leasePolicy } from '../../src/store/leases.js';
import { startSipService, type SipService } from '../../src/telephony/sip-service.js';
import type { MediaWorkerListener, MediaWorkers } from '../../src/telephony/media-workers.js';
import { Trunks, type Trunk } from '../../src/telephony/trunks.js';
import { WorkerCalls } from '../../src/telephony/worker-calls.js';
import { conversationStore, MainClient } from '../../src/workers/main-client.js';
import { createRequestHandler } from '../../src/workers/main-handlers.js';
import type { CallMessage, WorkerMessage } from '../../src/workers/worker-protocol.js';
import { api, startTestServer, type ApiClient, type TestServer } from '../helpers/server.js';

/** One engine call: what (`open`, `update`, `speak`, `respond`) and its text, in the order made. */
export interface EngineCall {
  what: 'open' | 'update' | 'speak' | 'respond';
  text: string;
  atMs: number;
}

/** The media worker in this thread, as main's MediaWorkers sees it (one worker, id 0). */
class LocalWorker implements MediaWorkers {
  listener: MediaWorkerListener | null = null;
  /** Every telephony message main sent, in order. */
  readonly sent: CallMessage[] = [];
  calls!: WorkerCalls;

  leastLoaded(): number | null {
    return 0;
  }

  send(_workerId: number, msg: CallMessage): void {
    this.sent.push(msg);
    // Across threads in production: delivered on a later turn, never inside the sender's call.
    setImmediate(() => this.calls.handle(msg));
  }

  listen(listener: MediaWorkerListener): void {
    this.listener = listener;
  }
}

export interface CallNode {
  server: TestServer;
  sip: SipService;
  client: ApiClient;
  worker: LocalWorker;
  /** Per conversation (by id, once it has one, else in order of creation): its engine session's calls. */
  engineLog: EngineCall[][];
  close(): Promise<void>;
}

export interface CallNodeOptions {
  trunks: Trunk[];
  script: EngineScript;
  env?: Record<string, string>;
}

export async function startCallNode(opts: CallNodeOptions): Promise<CallNode> {
  const server = await startTestServer({ db: 'postgres', env: { PARLEY_SIP_PORT: '0', ...opts.env } });
  const log = createLogger(server.settings.PARLEY_LOG_LEVEL);
  const handler = createRequestHandler({
    sql: server.sql,
    policy: leasePolicy(server.settings),
    log,
    now: () => new Date(),
  });
  const main: MainClient = new MainClient({
    postMessage: (m: WorkerMessage) => {
      if ('id' in m && m.type !== 'inspection') void handler(m).then((reply) => main.handleReply(reply));
    },
  });
  const store = conversationStore(main);
  const tts = createLocalTts({ cacheDir: null });
  const scripted = createScriptedEngine({ tts, voiceFor: () => 'en-us', log, script: opts.script });
  const engineLog: EngineCall[][] = [];
  const engine: SpeechEngine = {
    name: scripted.name,
    async open(options, hooks) {
      const calls: EngineCall[] = [{ what: 'open', text: '', atMs: Date.now() }];
      engineLog.push(calls);
      const session = await scripted.open(options, hooks);
      const logged =
        <A extends unknown[], R>(what: EngineCall['what'], fn: (...a: A) => R, text: (...a: A) => string) =>
        (...a: A): R => {
          calls.push({ what, text: text(...a), atMs: Date.now() });
          return fn(...a);
        };
      session.updateSession = logged(
        'update',
        session.updateSession.bind(session),
        (u) => u.systemMessage ?? JSON.stringify(u),
      );
      session.speak = logged('speak', session.speak.bind(session), (text) => text);
      session.createResponse = logged('respond', session.createResponse.bind(session), (i) => i ?? '');
      return session;
    },
  };
  const timers: ConversationTimers = {
    now: () => Date.now(),
    set: (fn, ms) => setTimeout(fn, ms),
    clear: (h) => clearTimeout(h as NodeJS.Timeout),
  };
  const worker = new LocalWorker();
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-call-node-'));
  const clock = new PacingClock({ onFrameEnd: () => worker.calls.frameEnd() });
  worker.calls = new WorkerCalls({
    workerId: 0,
    bindAddress: '127.0.0.1',
    post: (n) => {
      if (n.type === 'call_media_ready' || n.type === 'call_ended' || n.type === 'call_dtmf_out')
        setImmediate(() => worker.listener?.notice(0, n));
    },
    loadChanged: () => undefined,
    newConversation: (client: ConversationClient, origin: ConversationOrigin) =>
      new Conversation(
        {
          client,
          store,
          engineFor: () => engine,
          timers,
          pacing: clock,
          log,
          dataDir,
          allowPrivateEndpoints: true,
          fetch: globalThis.fetch,
        },
        origin,
      ),
    pacing: clock,
    rtpTimeoutMs: 30_000,
    log,
    maxCalls: 16,
  });
  let sip: SipService;
  try {
    sip = await startSipService({
      settings: server.settings,
      sql: server.sql,
      log,
      workers: worker,
      trunks: new Trunks(opts.trunks),
    });
  } catch (err) {
    clock.stop();
    await server.close();
    throw err;
  }
  server.ctx.outboundCalls = sip.outboundCalls;
  return {
    server,
    sip,
    client: api(server),
    worker,
    engineLog,
    close: async () => {
      try {
        await sip.stop(5_000);
        await worker.calls.endAll(5_000);
      } finally {
        clock.stop();
        await server.close();
      }
    },
  };
}
