// main's side of the media workers (docs/ARCHITECTURE.md, "Process shape"): starts PARLEY_WORKERS worker threads that
// share the realtime port, answers their requests with the store, keeps the directory conversationId -> worker,
// relays observer and reconnect sockets that landed on another worker to the owner, carries telephony's messages
// to the worker running a call and its notices back, tells the owner of a conversation canceled through the API,
// sweeps for conversations of dead nodes (src/domain/recovery.ts), and shuts them down in order.
import { createServer } from 'node:net';
import { Worker } from 'node:worker_threads';
import { conversationNodeId, type Settings } from '../config.js';
import type { Logger } from '../log.js';
import type { Sql } from '../store/db.js';
import { leasePolicy, startHeartbeat } from '../store/leases.js';
import { CANCELED_CHANNEL, onConversationCanceled } from '../store/conversations.js';
import { subscribe } from '../store/notifications.js';
import { startRecoverySweep } from '../domain/recovery.js';
import { tuneHeapForMedia } from './heap-tuning.js';
import { nodeMetrics } from '../metrics/node.js';
import { createRequestHandler } from './main-handlers.js';
import { resumeCompressions } from './recording-resume.js';
import type { RecordingCompressor } from '../media/recording-compressor.js';
import type {
  CallMessage,
  CallNotice,
  MainMessage,
  RelayKind,
  SocketInspection,
  WorkerMessage,
} from './worker-protocol.js';
import type { WorkerData } from './worker.js';

export const POOL_DEFAULTS = {
  /** Time a worker has to end and save its live conversations at shutdown before it is terminated. */
  shutdown_grace_ms: 10_000,
  /** A worker that has not listened within this is taken as failed (start-up). */
  start_timeout_ms: 30_000,
  /** A worker that has not answered `inspect` within this is reported as failed. */
  inspect_timeout_ms: 5_000,
} as const;

/** Beyond the worker's own shutdown bounds, before main terminates it. */
const WORKER_EXIT_SLACK_MS = 5_000;

/**
 * Relay close codes (RFC 6455 7.4.2: 4000-4999 are for applications; docs/sts-protocol.md, "Closing"): an observer
 * of a conversation not live here (4404) or of another workspace's (4403); a reconnect that came too late (4800) or
 * names another workspace's conversation (4801); the owning worker went away (4410).
 */
export const RELAY_CLOSE = {
  notFound: 4404,
  forbidden: 4403,
  ownerGone: 4410,
  sessionExpired: 4800,
  invalidState: 4801,
} as const;

/** Abandoned conversations ended per recovery sweep at most (src/domain/recovery.ts). */
const RECOVERY_SWEEP_LIMIT = 100;

export interface WorkerPoolOptions {
  settings: Settings;
  sql: Sql;
  log: Logger;
  /** Worker count; PARLEY_WORKERS by default. */
  workers?: number;
  now?: () => Date;
  /**
   * A worker ended on its own (a crash), called once the requests it had made are answered (so a record it was
   * creating exists before anyone finishes it): main.ts ends its calls, then stops the node; by default it is
   * logged only.
   */
  onWorkerLost?: (workerId: number, code: number) => void;
}

export interface WorkerPool {
  /** The realtime port every worker listens on. */
  readonly port: number;
  readonly workerCount: number;
  /** conversationId -> worker id, for the conversations live on this node. */
  ownerOf(conversationId: string): number | undefined;
  /** Conversations per worker, as last reported. */
  load(): number[];
  /** Sockets relayed to another worker's conversation since start, by kind. */
  readonly relayed: Record<RelayKind, number>;
  /** Every worker's open sockets and what each holds unsent, by worker id. */
  inspect(): Promise<SocketInspection[][]>;
  /** The running worker with the least load (its conversations and calls), or null when none runs. */
  leastLoaded(): number | null;
  /** Sends a telephony message to a worker; a call_assigned counts in its load at once. Dropped for an ended worker. */
  sendCall(workerId: number, msg: CallMessage): void;
  /** Where the workers' telephony notices go (one listener; without one they are logged and dropped). */
  onCallNotice(listener: (workerId: number, notice: CallNotice) => void): void;
  /** Starts draining every worker (worker-protocol.ts `drain`): no new STS conversation, live ones go on. */
  drain(): void;
  /** While draining: conversations (starting ones included) and calls still running on the running workers; null until each reported. */
  drainLive(): number | null;
  close(graceMs?: number): Promise<void>;
}

interface Member {
  id: number;
  worker: Worker;
  exited: Promise<void>;
  running: boolean;
  /** As the worker last reported (`load`): its conversations and calls. */
  conversations: number;
  /** Calls assigned since that report, which it may not count yet. */
  assignedSinceLoad: number;
  /** Its requests being answered. */
  inFlight: Set<Promise<void>>;
  /** While draining: what still runs there, as last reported (null until its first drain_progress). */
  drainLive: number | null;
}

interface Relay {
  socketWorker: number;
  ownerWorker: number;
}

const WORKER_URL = new URL('./worker.ts', import.meta.url);

/**
 * Workers run TypeScript as main does, through tsx: a `--import tsx` passed down in execArgv does not reach a
 * worker's entry module on Node 20 (it fails with ERR_UNKNOWN_FILE_EXTENSION), so a tiny evaluated bootstrap
 * registers tsx's loader in the worker and then imports the entry.
 */
const TSX_API = import.meta.resolve('tsx/esm/api');
const BOOTSTRAP = `import(${JSON.stringify(TSX_API)}).then((m) => { m.register(); return import(${JSON.stringify(WORKER_URL.href)}); });`;

/** A free TCP port on `host`: uSockets shares a port between workers only when it is given, not for port 0. */
function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, host, () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

export async function startWorkerPool(opts: WorkerPoolOptions): Promise<WorkerPool> {
  const { settings, sql, log } = opts;
  tuneHeapForMedia(); // before the workers' isolates exist
  const count = opts.workers ?? settings.PARLEY_WORKERS;
  const policy = leasePolicy(settings);
  const handle = createRequestHandler({ sql, policy, log, now: opts.now ?? (() => new Date()) });
  const heartbeat = startHeartbeat(sql, policy, log);
  // Conversations of dead nodes, any node's, once a lease TTL has passed without their lease being renewed.
  const recovery = startRecoverySweep(
    { sql, log, dataDir: settings.PARLEY_DATA_DIR, nodeId: conversationNodeId(settings), leaseNodeId: policy.nodeId },
    {
      isLive: (id) => directory.has(id),
      minAgeSec: policy.ttlSec,
      limit: RECOVERY_SWEEP_LIMIT,
      everyMs: policy.ttlSec * 1000,
    },
  );
  // A cancel through the API (this node's, and on PostgreSQL every node's): the owning worker ends it at once.
  const canceled = (conversationId: string) => {
    const owner = directory.get(conversationId);
    if (owner) post(owner.worker, { type: 'conversation_cancel', conversationId });
  };
  const unsubscribeLocal = onConversationCanceled(canceled);
  let unsubscribeRemote: (() => Promise<void>) | null = null;
  if (settings.DATABASE_URL) {
    try {
      unsubscribeRemote = await subscribe(sql, CANCELED_CHANNEL, canceled, () => undefined);
    } catch (err) {
      log.error(
        { err },
        'cannot listen for cancels of other nodes: a conversation canceled there stops at its next write',
      );
    }
  }
  const members: Member[] = [];
  const directory = new Map<string, { worker: number; orgId: string }>();
  const relays = new Map<number, Relay>();
  const relayed: Record<RelayKind, number> = { observer: 0, reconnect: 0 };
  /** Inspections waiting on a worker's answer, by request id. */
  const inspections = new Map<number, (sockets: SocketInspection[]) => void>();
  let nextInspection = 1;
  let closing = false;
  let callListener: ((workerId: number, notice: CallNotice) => void) | null = null;
  // Compressions a previous run of this node left undone: found before any worker runs (so none of this run's
  // recordings is taken for one), then compressed in the background. A failure is logged; the rows stay on their
  // playable .wav.
  let resumed: RecordingCompressor | null = null;
  try {
    resumed = (
      await resumeCompressions({ sql, dataDir: settings.PARLEY_DATA_DIR, log, nodeId: conversationNodeId(settings) })
    ).compressor;
  } catch (err) {
    log.error({ err }, 'resuming recording compressions failed');
  }

  const post = (workerId: number, msg: MainMessage) => {
    const m = members[workerId];
    if (m) m.worker.postMessage(msg);
  };

  function onNotice(from: Member, msg: WorkerMessage, ready: (port: number) => void): void {
    switch (msg.type) {
      case 'worker_ready':
        ready(msg.port);
        return;
      case 'conversation_opened':
        directory.set(msg.conversationId, { worker: from.id, orgId: msg.orgId });
        return;
      case 'conversation_closed':
        if (directory.get(msg.conversationId)?.worker === from.id) directory.delete(msg.conversationId);
        return;
      case 'load':
        from.conversations = msg.conversations;
        from.assignedSinceLoad = 0;
        return;
      case 'call_media_ready':
      case 'call_ended':
      case 'call_transfer':
      case 'call_dtmf_out':
        if (callListener) callListener(from.id, msg);
        else
          log.warn(
            { workerId: from.id, notice: msg.type, callId: msg.callId },
            'telephony notice with no telephony listening',
          );
        return;
      case 'metrics':
        nodeMetrics.workerSnapshot(from.id, msg.snapshot);
        return;
      case 'drain_progress':
        from.drainLive = msg.live;
        return;
      case 'inspection':
        inspections.get(msg.id)?.(msg.sockets);
        inspections.delete(msg.id);
        return;
      case 'relay_request': {
        const owner = directory.get(msg.conversationId);
        const refuse = (code: number, reason: string) =>
          post(from.id, { type: 'relay_closed', relayId: msg.relayId, code, reason });
        const reconnect = msg.kind === 'reconnect';
        if (!owner)
          return refuse(
            reconnect ? RELAY_CLOSE.sessionExpired : RELAY_CLOSE.notFound,
            'conversation is not live on this node',
          );
        if (owner.orgId !== msg.auth.orgId) {
          return refuse(
            reconnect ? RELAY_CLOSE.invalidState : RELAY_CLOSE.forbidden,
            'conversation belongs to another workspace',
          );
        }
        relays.set(msg.relayId, { socketWorker: from.id, ownerWorker: owner.worker });
        relayed[msg.kind]++;
        post(owner.worker, {
          type: 'relay_open',
          relayId: msg.relayId,
          conversationId: msg.conversationId,
          kind: msg.kind,
          auth: msg.auth,
        });
        return;
      }
      case 'relay_to_socket': {
        const r = relays.get(msg.relayId);
        if (r) post(r.socketWorker, msg);
        return;
      }
      case 'relay_flow': {
        const r = relays.get(msg.relayId);
        if (r && from.id === r.socketWorker) post(r.ownerWorker, msg);
        return;
      }
      case 'relay_from_socket': {
        const r = relays.get(msg.relayId);
        if (r) post(r.ownerWorker, msg);
        return;
      }
      case 'relay_closed': {
        const r = relays.get(msg.relayId);
        if (!r) return;
        relays.delete(msg.relayId);
        post(from.id === r.socketWorker ? r.ownerWorker : r.socketWorker, msg);
        return;
      }
      default: {
        const answered: Promise<void> = handle(msg, {
          owns: (conversationId) => directory.get(conversationId)?.worker === from.id,
        })
          .then(
            (reply) => {
              if (from.running) from.worker.postMessage(reply satisfies MainMessage);
            },
            (err: Error) => log.error({ err }, 'worker request handler failed'),
          )
          .finally(() => from.inFlight.delete(answered));
        from.inFlight.add(answered);
      }
    }
  }

  function spawn(id: number, port: number): Promise<number> {
    const workerData: WorkerData = { workerId: id, settings, port };
    const worker = new Worker(BOOTSTRAP, {
      eval: true,
      workerData,
      execArgv: process.execArgv.filter((a) => a === '--enable-source-maps'),
    });
    let resolveExit!: () => void;
    const member: Member = {
      id,
      worker,
      running: true,
      conversations: 0,
      assignedSinceLoad: 0,
      inFlight: new Set(),
      drainLive: null,
      exited: new Promise((r) => (resolveExit = r)),
    };
    members[id] = member;
    return new Promise<number>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`media worker ${id} did not start within ${POOL_DEFAULTS.start_timeout_ms} ms`)),
        POOL_DEFAULTS.start_timeout_ms,
      );
      const ready = (p: number) => {
        clearTimeout(timer);
        resolve(p);
      };
      worker.on('message', (msg: WorkerMessage) => onNotice(member, msg, ready));
      worker.on('error', (err) => {
        clearTimeout(timer);
        log.error({ err, workerId: id }, 'media worker failed');
        reject(err);
      });
      worker.on('exit', (code) => {
        clearTimeout(timer);
        member.running = false;
        resolveExit();
        for (const [cid, o] of directory) if (o.worker === id) directory.delete(cid);
        for (const [rid, r] of relays) {
          if (r.ownerWorker !== id && r.socketWorker !== id) continue;
          relays.delete(rid);
          const other = r.ownerWorker === id ? r.socketWorker : r.ownerWorker;
          post(other, { type: 'relay_closed', relayId: rid, code: RELAY_CLOSE.ownerGone, reason: 'worker ended' });
        }
        if (!closing) {
          log.fatal({ workerId: id, code }, 'media worker ended unexpectedly');
          reject(new Error(`media worker ${id} exited with code ${code}`));
          // Its requests still being answered (a record being created) settle first.
          void Promise.allSettled([...member.inFlight]).then(() => opts.onWorkerLost?.(id, code));
        }
      });
    });
  }

  const inspectWorker = (m: Member) =>
    new Promise<SocketInspection[]>((resolve, reject) => {
      const id = nextInspection++;
      const timer = setTimeout(() => {
        inspections.delete(id);
        reject(new Error(`media worker ${m.id} did not answer inspect within ${POOL_DEFAULTS.inspect_timeout_ms} ms`));
      }, POOL_DEFAULTS.inspect_timeout_ms);
      inspections.set(id, (sockets) => {
        clearTimeout(timer);
        resolve(sockets);
      });
      post(m.id, { type: 'inspect', id });
    });

  const close = async (graceMs: number = POOL_DEFAULTS.shutdown_grace_ms) => {
    if (closing) return;
    closing = true;
    unsubscribeLocal();
    await unsubscribeRemote?.().catch((err: Error) => log.warn({ err }, 'stopping to listen for cancels failed'));
    await recovery.stop();
    await resumed?.close();
    for (const m of members) m.worker.postMessage({ type: 'shutdown', graceMs } satisfies MainMessage);
    await Promise.all(
      members.map(async (m) => {
        // Last resort only: terminating a worker whose uWS sockets are still open aborts Node. The worker bounds
        // its own shutdown (graceMs to save conversations, 1 s for sockets, graceMs for the last replies).
        const killer = setTimeout(
          () => {
            log.error({ workerId: m.id }, 'media worker did not end within its grace period; terminating it');
            void m.worker.terminate();
          },
          2 * graceMs + WORKER_EXIT_SLACK_MS,
        );
        await m.exited;
        clearTimeout(killer);
      }),
    );
    await heartbeat.stop();
  };

  let port = settings.PARLEY_WS_PORT;
  try {
    // Every worker binds the same port (SO_REUSEPORT in uSockets); the kernel spreads connections among them.
    if (port === 0 && count > 1) port = await freePort(settings.PARLEY_HOST);
    port = await spawn(0, port);
    await Promise.all(Array.from({ length: count - 1 }, (_, i) => spawn(i + 1, port)));
  } catch (err) {
    await close(1_000);
    throw err;
  }
  log.info({ port, workers: count }, 'realtime workers listening');
  return {
    port,
    workerCount: count,
    ownerOf: (id) => directory.get(id)?.worker,
    load: () => members.map((m) => m.conversations),
    relayed,
    inspect: () => Promise.all(members.map(inspectWorker)),
    leastLoaded: () => {
      let best: Member | null = null;
      for (const m of members) {
        if (!m.running) continue;
        if (best === null || m.conversations + m.assignedSinceLoad < best.conversations + best.assignedSinceLoad)
          best = m;
      }
      return best?.id ?? null;
    },
    sendCall: (workerId, msg) => {
      const m = members[workerId];
      if (!m?.running) return;
      if (msg.type === 'call_assigned') m.assignedSinceLoad++;
      m.worker.postMessage(msg satisfies MainMessage);
    },
    onCallNotice: (listener) => {
      callListener = listener;
    },
    drain: () => {
      for (const m of members) if (m.running) m.worker.postMessage({ type: 'drain' } satisfies MainMessage);
    },
    drainLive: () => {
      let live = 0;
      for (const m of members) {
        if (!m.running) continue;
        if (m.drainLive === null) return null;
        live += m.drainLive;
      }
      return live;
    },
    close,
  };
}
