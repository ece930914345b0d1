// A call through a real media worker thread (src/workers/worker.ts), the test playing main: it answers the worker's
// store requests from an in-memory store and sends the telephony messages main would. The echo comes back on RTP,
// the worker counts the call in its load, posts call_ended after finish_conversation was answered, and its shutdown
// ends a live call and saves it.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import t from 'tap';
import { loadSettings } from '../../src/config.js';
import type { MainMessage, WorkerMessage, WorkerNotice } from '../../src/workers/worker-protocol.js';
import type { WorkerData } from '../../src/workers/worker.js';
import { MemoryStore } from '../conversation/harness.js';
import { loadPrompt } from '../media/speech.js';
import {
  agent,
  envelope,
  g711Decode,
  g711Frames,
  LOOPBACK,
  media,
  PeerStream,
  PT_PCMU,
  TestPeer,
  waitFor,
  type CallAssigned,
} from './harness.js';

t.setTimeout(120_000);

const WORKER_URL = new URL('../../src/workers/worker.ts', import.meta.url);
const TSX_API = import.meta.resolve('tsx/esm/api');
const BOOTSTRAP = `import(${JSON.stringify(TSX_API)}).then((m) => { m.register(); return import(${JSON.stringify(WORKER_URL.href)}); });`;

/** main's side, by hand: the store requests answered, every notice and request kept in arrival order. */
class FakeMain {
  readonly store = new MemoryStore();
  readonly seen: WorkerMessage[] = [];
  readonly exited: Promise<number>;
  constructor(readonly worker: Worker) {
    this.exited = new Promise((r) => worker.once('exit', r));
    worker.on('message', (m: WorkerMessage) => {
      this.seen.push(m);
      if ('id' in m && m.type !== 'inspection') void this.answer(m);
    });
  }

  private async answer(m: Extract<WorkerMessage, { id: number }>): Promise<void> {
    const s = this.store;
    let value: unknown;
    switch (m.type) {
      case 'create_conversation':
        value = await s.createConversation(m.conversation);
        break;
      case 'update_conversation':
        value = await s.updateConversation(m.conversationId, m.patch);
        break;
      case 'append_items':
        value = await s.appendItems(m.conversationId, m.items);
        break;
      case 'finish_conversation':
        value = await s.finishConversation(m.conversationId, m.finish, m.recordings);
        break;
      case 'resolve_tools':
        value = [];
        break;
      case 'recording_compressed':
        value = { updated: true };
        break;
      default:
        throw new Error(`unexpected request ${m.type}`);
    }
    this.post({ type: 'reply', id: m.id, ok: true, value });
  }

  post(m: MainMessage): void {
    this.worker.postMessage(m);
  }

  notices<T extends WorkerNotice['type']>(type: T): Extract<WorkerNotice, { type: T }>[] {
    return this.seen.filter((m) => m.type === type) as Extract<WorkerNotice, { type: T }>[];
  }

  /** call_assigned on free even ports until the worker binds them; returns the port. */
  async assign(msg: Omit<CallAssigned, 'rtpPort'>): Promise<number> {
    for (let attempt = 0; attempt < 50; attempt++) {
      const rtpPort = 20000 + 2 * Math.floor(Math.random() * 15000);
      const before = this.notices('call_media_ready').length;
      this.post({ ...msg, rtpPort });
      await waitFor(() => this.notices('call_media_ready').length > before, 'call_media_ready');
      if (this.notices('call_media_ready')[before].ok) return rtpPort;
    }
    throw new Error('no free RTP port');
  }
}

t.test('a call through a media worker thread: echo, load, call_ended after the record, shutdown', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-worker-call-'));
  const settings = loadSettings({
    PARLEY_DATA_DIR: dataDir,
    PARLEY_WS_PORT: '0',
    PARLEY_LOG_LEVEL: 'silent',
    PARLEY_ENGINE_DEFAULT: 'echo',
  });
  const data: WorkerData = { workerId: 0, settings, port: 0 };
  const worker = new Worker(BOOTSTRAP, {
    eval: true,
    workerData: data,
    execArgv: process.execArgv.filter((a) => a === '--enable-source-maps'),
  });
  const main = new FakeMain(worker);
  const peer = await TestPeer.open();
  t.teardown(() => {
    peer.close();
    void worker.terminate();
  });
  await waitFor(() => main.notices('worker_ready').length === 1, 'the worker');

  const call = (callId: string): Omit<CallAssigned, 'rtpPort'> => ({
    type: 'call_assigned',
    callId,
    conversationId: `conv_${callId}`,
    remote: { address: LOOPBACK, port: peer.port },
    media: media('PCMU'),
    agent: agent(),
    origin: 'telephony-outbound',
    callInfo: { from_phone_number: '+14155550199', to_phone_number: '+14155550100' },
    configurationEndpoint: null,
    overrides: { system_prompt: 'Outbound.' },
    listenOnly: false,
  });
  const rtpPort = await main.assign(call('one'));
  t.match(main.notices('load').at(-1), { conversations: 1 }, "the assigned call counts in the worker's load");
  main.post({ type: 'call_start', callId: 'one' });
  await waitFor(() => main.notices('conversation_opened').length === 1 && peer.rtpIn.length > 5, "the call's stream");
  t.match(main.notices('conversation_opened')[0], { conversationId: 'conv_one', orgId: 'org_test' });

  const prompt = loadPrompt('call-forwarding');
  const stream = new PeerStream(peer, rtpPort, PT_PCMU);
  await stream.play([...g711Frames(prompt, 'PCMU'), ...g711Frames(new Int16Array(75 * 160), 'PCMU')]);
  const loudIn = envelope(prompt).filter((e) => e > 500).length;
  await waitFor(
    () => peer.packets().filter((p) => envelope(g711Decode(p.payload, 'PCMU'))[0] > 500).length >= loudIn * 0.9,
    'the echo',
  );

  main.post({ type: 'call_hangup', callId: 'one', reason: 'bye' });
  await waitFor(() => main.notices('call_ended').length === 1, 'call_ended');
  const finishAt = main.seen.findIndex((m) => m.type === 'finish_conversation');
  const endedAt = main.seen.findIndex((m) => m.type === 'call_ended');
  t.ok(finishAt >= 0 && finishAt < endedAt, 'the record was finished before call_ended');
  t.match(main.notices('call_ended')[0], { callId: 'one', conversationId: 'conv_one', endedBy: 'user', started: true });
  const rec = main.store.records.get('conv_one')!;
  t.match(
    rec.conversation,
    { origin: 'telephony-outbound', settings: { system_prompt: 'Outbound.' } },
    'the outbound overrides applied',
  );
  t.ok(
    rec.finish?.rtp && rec.finish.rtp.inbound.packets_received === stream.sent,
    'the RTP statistics crossed to main',
  );
  t.match(main.notices('load').at(-1), { conversations: 0 });

  // Shutdown with a call live: it ends (error), its record is saved, call_ended is posted, the worker exits.
  await main.assign(call('two'));
  main.post({ type: 'call_start', callId: 'two' });
  await waitFor(() => main.store.records.get('conv_two')?.patches.length === 2, 'the second call ready');
  main.post({ type: 'shutdown', graceMs: 3000 });
  t.equal(await main.exited, 0, 'the worker exits cleanly');
  t.match(main.notices('call_ended')[1], { callId: 'two', endedBy: 'error', started: true });
  t.equal(main.store.records.get('conv_two')?.finish?.ended_by, 'error');
});
