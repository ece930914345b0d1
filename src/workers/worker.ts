// A media worker (docs/ARCHITECTURE.md, "Process shape"): one uWebSockets.js app on the shared realtime port and
// every conversation it accepts, the phone calls main assigns it (src/telephony/worker-calls.ts), with the worker's
// one pacing clock. It reaches the database only through main.
import { parentPort, workerData } from 'node:worker_threads';
import { performance } from 'node:perf_hooks';
import { conversationNodeId, metricsExposed, type Settings } from '../config.js';
import { createLogger } from '../log.js';
import { parseTrustedProxies } from '../auth/addresses.js';
import { Conversation } from '../conversation/conversation.js';
import type { ConversationClient, ConversationOrigin, ConversationTimers } from '../conversation/host.js';
import { PacingClock } from '../media/pacing-clock.js';
import { createGuardedFetch } from '../net/guarded-fetch.js';
import { createWebSearch } from '../engines/web-search.js';
import { RecordingCompressor } from '../media/recording-compressor.js';
import { compressionStore, conversationStore, MainClient, storageChannel } from './main-client.js';
import { liveExternalStorage } from '../jobs/external-storage/live-delivery.js';
import { LiveHost } from '../realtime/live-host.js';
import { StsServer } from '../realtime/sts-server.js';
import { WorkerCalls } from '../telephony/worker-calls.js';
import { engineLookup } from './engines.js';
import { mediaMetrics, type WorkerMetricsSnapshot } from '../metrics/media.js';
import { RuntimeMetrics } from '../metrics/runtime.js';
import { SpanTimer } from '../metrics/histogram.js';
import { CONVERSATION_ORIGINS } from '../schemas/conversations.js';
import type { MainMessage, WorkerNotice } from './worker-protocol.js';

export interface WorkerData {
  workerId: number;
  settings: Settings;
  /** The port to listen on (main passes the one the first worker got when the setting is 0). */
  port: number;
}

/** How often a worker posts its metrics to main (a scrape sees values at most this old). */
const METRICS_SNAPSHOT_MS = 1000;

const data = workerData as WorkerData;
const port = parentPort!;
const { settings, workerId } = data;
const log = createLogger(settings.PARLEY_LOG_LEVEL).child({ worker: workerId });
const post = (notice: WorkerNotice) => port.postMessage(notice);
const main = new MainClient({ postMessage: (m) => port.postMessage(m) });
const store = conversationStore(main);
// Each frame ends with the calls' packets of that frame, after every conversation has ticked; its cost is measured.
const frameTime = new SpanTimer(mediaMetrics.frame, () => performance.now());
const pacing = new PacingClock({
  onFrameStart: () => frameTime.start(),
  onFrameEnd: () => {
    calls.frameEnd();
    frameTime.end();
  },
});
const timers: ConversationTimers = {
  now: () => Date.now(),
  set: (fn, ms) => setTimeout(fn, ms),
  clear: (h) => clearTimeout(h as NodeJS.Timeout),
};
const engineFor = engineLookup(settings, log);
/**
 * HTTP to the URLs customers configure (webhook tools, configuration endpoints, external storage buckets): public
 * addresses only unless PARLEY_ALLOW_PRIVATE_ENDPOINTS. The engines' chat, speech-to-text and text-to-speech
 * clients are not guarded: they call the model servers the operator set in the settings, which are often private.
 */
const endpointFetch = createGuardedFetch({ allowPrivate: settings.PARLEY_ALLOW_PRIVATE_ENDPOINTS });
/** The web_search built-in's server (the operator's, like the engines' model servers: not guarded). */
const webSearch = settings.PARLEY_WEB_SEARCH_URL ? createWebSearch(settings.PARLEY_WEB_SEARCH_URL) : null;
/** Gzips this worker's finished recordings after their records are saved (one at a time). */
const recordingCompressor = new RecordingCompressor({ store: compressionStore(main), log });
/** Artifacts of conversations whose agent names an external storage policy, delivered to its bucket. */
const externalStorage = liveExternalStorage({ channel: storageChannel(main), fetch: endpointFetch, log });

const newConversation = (client: ConversationClient, origin: ConversationOrigin) =>
  new Conversation(
    {
      client,
      store,
      engineFor,
      timers,
      pacing,
      log,
      dataDir: settings.PARLEY_DATA_DIR,
      recordingCompressor,
      externalStorage,
      allowPrivateEndpoints: settings.PARLEY_ALLOW_PRIVATE_ENDPOINTS,
      fetch: endpointFetch,
      webSearch,
      nodeId: conversationNodeId(settings),
    },
    origin,
  );

// The worker's load counts its STS conversations and its calls; while draining, main also hears what still runs.
let draining = false;
const postLoad = () => {
  post({ type: 'load', workerId, conversations: host.count + calls.count });
  if (draining) post({ type: 'drain_progress', workerId, live: host.count + host.starting + calls.count });
};

const host = new LiveHost({
  workerId,
  rules: { PARLEY_ALLOW_PRIVATE_ENDPOINTS: settings.PARLEY_ALLOW_PRIVATE_ENDPOINTS },
  reconnectGraceMs: settings.PARLEY_RECONNECT_GRACE_SEC * 1000,
  configTimeoutMs: settings.PARLEY_STS_CONFIG_TIMEOUT_SEC * 1000,
  post: (notice) => (notice.type === 'load' ? postLoad() : post(notice)),
  log,
  newConversation,
});

const calls = new WorkerCalls({
  workerId,
  bindAddress: settings.PARLEY_HOST,
  post,
  loadChanged: postLoad,
  newConversation,
  pacing,
  rtpTimeoutMs: settings.PARLEY_RTP_TIMEOUT_SEC * 1000,
  log,
});

const server = new StsServer({
  host: settings.PARLEY_HOST,
  port: data.port,
  workerId,
  main,
  post,
  trustedProxies: parseTrustedProxies(settings.PARLEY_TRUSTED_PROXIES),
  host_: host,
  log,
});

/** This thread's metrics as main serves them: posted every METRICS_SNAPSHOT_MS while metrics are exposed. */
const runtime = new RuntimeMetrics();
const postMetrics = () => {
  // Every origin present, 0 included: a series that drops out reads as missing data, not as none live.
  const conversations: Record<string, number> = Object.fromEntries(CONVERSATION_ORIGINS.map((o) => [o, 0]));
  const held: Record<string, number> = { 'telephony-inbound': 0, 'telephony-outbound': 0 };
  host.countByOrigin(conversations);
  const rtp = calls.metricsInto(held, conversations);
  const snapshot: WorkerMetricsSnapshot = {
    runtime: runtime.snapshot(),
    frame: mediaMetrics.frame.snapshot(),
    firstAudio: mediaMetrics.firstAudio.snapshot(),
    rtpJitter: mediaMetrics.rtpJitter.snapshot(),
    rtp,
    conversations,
    calls: held,
  };
  post({ type: 'metrics', workerId, snapshot });
};
let metricsTimer: NodeJS.Timeout | null = null;
if (metricsExposed(settings)) {
  runtime.start();
  metricsTimer = setInterval(postMetrics, METRICS_SNAPSHOT_MS);
  metricsTimer.unref();
}

let stopping = false;
async function shutdown(graceMs: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  if (metricsTimer) clearInterval(metricsTimer);
  runtime.stop();
  await Promise.all([server.close(graceMs), calls.endAll(graceMs)]);
  // Compressions not done are abandoned: their partial .gz removed, their rows left on the playable .wav.
  await recordingCompressor.close();
  // Let the close frames and the last finish_conversation replies go out before the thread ends.
  const deadline = Date.now() + graceMs;
  while (main.inFlight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  log.debug('media worker stopped');
  port.close();
  process.exit(0);
}

port.on('message', (msg: MainMessage) => {
  switch (msg.type) {
    case 'reply':
      return main.handleReply(msg);
    case 'relay_open':
      return server.relayOpen(msg.relayId, msg.kind, msg.auth, msg.conversationId);
    case 'relay_to_socket':
      return server.relayToSocket(msg.relayId, msg.data, msg.binary);
    case 'relay_from_socket':
      return host.relayData(msg.relayId, msg.data, msg.binary);
    case 'relay_closed':
      return server.relayClosed(msg.relayId, msg.code, msg.reason);
    case 'relay_flow':
      return server.relayFlow(msg.relayId, msg.paused);
    case 'inspect':
      return post({ type: 'inspection', id: msg.id, workerId, sockets: server.inspect() });
    case 'conversation_cancel':
      // An STS conversation of this worker, or a phone call's (ended, then hung up by main).
      return void (host.cancel(msg.conversationId) || calls.cancel(msg.conversationId));
    case 'drain':
      draining = true;
      server.drain();
      return postLoad();
    case 'shutdown':
      return void shutdown(msg.graceMs).catch((err: Error) => {
        log.error({ err }, 'media worker shutdown failed');
        process.exit(1);
      });
    case 'call_assigned':
    case 'call_media_update':
    case 'call_start':
    case 'call_hangup':
    case 'call_dtmf':
    case 'call_transfer':
      return calls.handle(msg);
  }
});

// Every way out of this thread that still runs JavaScript (an uncaught error, an unhandled rejection, a
// process.exit) closes uWS first: a thread that ends with uWS's handles open aborts the whole node, and main could
// then neither hang up this worker's calls nor finish their records (docs/telephony.md, "Stopping, and a media
// worker that dies"). A worker.terminate() runs no JavaScript: main uses it only as the last resort of a shutdown.
process.on('exit', () => server.closeNow());

server.listen().then(
  (p) => post({ type: 'worker_ready', workerId, port: p }),
  (err: Error) => {
    log.fatal({ err }, 'media worker cannot listen');
    process.exit(1);
  },
);
