// A fake OpenAI Realtime WebSocket server for tests (the `ws` package, 127.0.0.1, port 0). It speaks the protocol's
// event shapes: session.created / session.update -> session.updated, input_audio_buffer.append / commit / clear,
// input transcription events, response.create -> response.created, audio and transcript deltas, function calls,
// response.done, response.cancel, conversation.item.create / truncate, error. Each response follows the next
// plan of a script (a default plan when it runs out); every client event is recorded. As the protocol says, a
// session.update changing the voice after assistant audio was sent is refused (error cannot_update_voice), and a
// response.create while a response is active is refused (error conversation_already_has_active_response); as the
// server does, a response that calls functions ends (response.done) a moment after its calls.
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';

export interface ResponsePlan {
  /** Assistant audio: this many 24 kHz samples of tone, sent as `chunks` deltas (default 2400 in 2). */
  audioSamples?: number;
  chunks?: number;
  /** Sent as audio transcript deltas, split at spaces. */
  transcript?: string;
  /** A function call after the audio. */
  functionCall?: { name: string; arguments: string; call_id: string };
  /** Several function calls after the audio (after `functionCall`, if both). */
  functionCalls?: { name: string; arguments: string; call_id: string }[];
  /** Stop after the first audio delta until response.cancel (then: response.done status cancelled). */
  hold?: boolean;
  /** response.done status (default completed); `failed` carries status_details. */
  status?: 'completed' | 'failed';
  /** Use the newer `response.output_audio.delta` / `response.output_audio_transcript.delta` event names. */
  ga?: boolean;
  /** Instead of a response: an `error` event with this code. */
  error?: { code: string; message: string };
}

export interface FakeRealtimeServer {
  url: string;
  /** Every client event, in order. */
  events: { type: string; [k: string]: unknown }[];
  /** The request line and headers of the last upgrade. */
  lastUpgrade: { url: string; headers: Record<string, string | string[] | undefined> } | null;
  script(...plans: ResponsePlan[]): void;
  /** What input transcription reports for the next committed turn. */
  inputTranscript: string;
  /** Answer session.update with an error instead of session.updated. */
  refuseSession: boolean;
  /** Answer the upgrade with this HTTP status instead. */
  rejectUpgradeStatus: number | null;
  /** Closes every client connection abruptly (code 1011). */
  dropClients(): void;
  /** Resolves once an event of `type` has been received `count` times. */
  waitFor(type: string, count?: number): Promise<void>;
  close(): Promise<void>;
}

const RATE = 24_000;
/** From a response's function calls to its response.done. */
const CALL_TO_DONE_MS = 20;

export async function startFakeRealtimeServer(): Promise<FakeRealtimeServer> {
  const plans: ResponsePlan[] = [];
  const waiters: { type: string; count: number; resolve: () => void }[] = [];
  const clients = new Set<WebSocket>();
  let responseSeq = 0;
  let itemSeq = 0;

  const fake: FakeRealtimeServer = {
    url: '',
    events: [],
    lastUpgrade: null,
    inputTranscript: 'hello there',
    refuseSession: false,
    rejectUpgradeStatus: null,
    script: (...p) => void plans.push(...p),
    dropClients: () => clients.forEach((c) => c.close(1011, 'server going away')),
    waitFor(type, count = 1) {
      return new Promise((resolve) => {
        waiters.push({ type, count, resolve });
        check();
      });
    },
    close: async () => {
      clients.forEach((c) => c.terminate());
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };

  function check(): void {
    for (let i = waiters.length - 1; i >= 0; i--) {
      const w = waiters[i];
      if (fake.events.filter((e) => e.type === w.type).length >= w.count) {
        waiters.splice(i, 1);
        w.resolve();
      }
    }
  }

  const wss = new WebSocketServer({
    host: '127.0.0.1',
    port: 0,
    verifyClient: (info, cb) => {
      fake.lastUpgrade = { url: info.req.url ?? '', headers: info.req.headers };
      if (fake.rejectUpgradeStatus !== null) cb(false, fake.rejectUpgradeStatus, 'rejected by the fake');
      else cb(true);
    },
  });
  await once(wss, 'listening');
  fake.url = `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/v1/realtime`;

  wss.on('connection', (ws) => {
    clients.add(ws);
    ws.on('close', () => clients.delete(ws));
    const send = (e: Record<string, unknown>) => ws.readyState === ws.OPEN && ws.send(JSON.stringify(e));
    let held: { id: string; resume: () => void } | null = null;
    /** Assistant audio sent on this session: the voice is fixed from then on. */
    let audioSent = false;
    /** The response under way (from response.created to response.done or its cancel). */
    let active: string | null = null;
    send({ type: 'session.created', session: { id: 'sess_fake' } });

    async function respond(plan: ResponsePlan): Promise<void> {
      if (plan.error) return void send({ type: 'error', error: { type: 'invalid_request_error', ...plan.error } });
      const id = `resp_${++responseSeq}`;
      const itemId = `item_${++itemSeq}`;
      active = id;
      send({ type: 'response.created', response: { id, status: 'in_progress' } });
      const total = plan.audioSamples ?? 2400;
      const chunks = plan.chunks ?? 2;
      const per = Math.ceil(total / chunks);
      const words = (plan.transcript ?? '').split(' ').filter(Boolean);
      const audioType = plan.ga ? 'response.output_audio.delta' : 'response.audio.delta';
      const textType = plan.ga ? 'response.output_audio_transcript.delta' : 'response.audio_transcript.delta';
      let canceled = false;
      for (let c = 0, at = 0; at < total; c++, at += per) {
        const pcm = Buffer.alloc(Math.min(per, total - at) * 2);
        for (let i = 0; i < pcm.length / 2; i++)
          pcm.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 440 * (at + i)) / RATE)), i * 2);
        if (words[c])
          send({ type: textType, response_id: id, item_id: itemId, delta: c === 0 ? words[c] : ` ${words[c]}` });
        send({
          type: audioType,
          response_id: id,
          item_id: itemId,
          output_index: 0,
          content_index: 0,
          delta: pcm.toString('base64'),
        });
        audioSent = true;
        if (c === 0 && plan.hold) {
          await new Promise<void>((resume) => (held = { id, resume }));
          canceled = true;
          break;
        }
        await new Promise((r) => setImmediate(r));
      }
      const calls = [...(plan.functionCall ? [plan.functionCall] : []), ...(plan.functionCalls ?? [])];
      if (!canceled && calls.length > 0) {
        for (const call of calls)
          send({
            type: 'response.function_call_arguments.done',
            response_id: id,
            item_id: `item_${++itemSeq}`,
            ...call,
          });
        // The server finishes the call items (output_item.done and the like) before response.done: a client that
        // answers a call at once gets there first.
        await new Promise((r) => setTimeout(r, CALL_TO_DONE_MS));
      }
      if (active === id) active = null;
      const status = canceled ? 'cancelled' : (plan.status ?? 'completed');
      send({
        type: 'response.done',
        response: {
          id,
          status,
          ...(status === 'failed' ? { status_details: { type: 'failed', error: { code: 'server_error' } } } : {}),
        },
      });
    }

    ws.on('message', (data) => {
      const event = JSON.parse(data.toString()) as { type: string; [k: string]: unknown };
      fake.events.push(event);
      check();
      switch (event.type) {
        case 'session.update':
          if (audioSent && (event.session as { voice?: unknown }).voice !== undefined) {
            send({
              type: 'error',
              error: {
                type: 'invalid_request_error',
                code: 'cannot_update_voice',
                message: "Cannot update a conversation's voice if assistant audio is present.",
              },
            });
          } else if (fake.refuseSession)
            send({
              type: 'error',
              error: { type: 'invalid_request_error', code: 'invalid_value', message: 'voice not supported' },
            });
          else send({ type: 'session.updated', session: event.session });
          return;
        case 'input_audio_buffer.commit': {
          const item = `item_${++itemSeq}`;
          send({ type: 'input_audio_buffer.committed', item_id: item });
          const words = fake.inputTranscript.split(' ');
          words.forEach((w, i) =>
            send({
              type: 'conversation.item.input_audio_transcription.delta',
              item_id: item,
              delta: i === 0 ? w : ` ${w}`,
            }),
          );
          send({
            type: 'conversation.item.input_audio_transcription.completed',
            item_id: item,
            transcript: fake.inputTranscript,
          });
          return;
        }
        case 'response.create':
          if (active !== null) {
            send({
              type: 'error',
              error: {
                type: 'invalid_request_error',
                code: 'conversation_already_has_active_response',
                message: `${active} is in progress`,
              },
            });
            return;
          }
          void respond(plans.shift() ?? { transcript: 'Okay.' });
          return;
        case 'response.cancel':
          if (held) {
            const h = held;
            held = null;
            // Cancelled at once: a response.create right after it is taken.
            active = null;
            h.resume();
          } else
            send({
              type: 'error',
              error: {
                type: 'invalid_request_error',
                code: 'response_cancel_not_active',
                message: 'no active response',
              },
            });
          return;
        default:
          return;
      }
    });
  });
  return fake;
}
