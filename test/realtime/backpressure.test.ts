// The backpressure policy (docs/sts-protocol.md, "Backpressure") over a socket whose buffered amount the test
// controls: assistant audio is refused above the high-water mark and resumes on drain below the low one, a
// control event uWS had to drop closes the socket with 1008, observer audio is dropped while backed up; a relayed
// socket's owner side follows the holding worker's relay_flow reports.
import t from 'tap';
import { BACKPRESSURE, CLOSE_BACKPRESSURE, RelaySink, SocketSink, type SocketState } from '../../src/realtime/sink.js';
import type { WorkerNotice } from '../../src/workers/worker-protocol.js';
import { observerFeed, StsClient } from '../../src/realtime/sts-client.js';
import { SEND_BACKPRESSURE, SEND_DROPPED, SEND_OK, type WebSocket } from '../../src/realtime/uws.js';

/** A uWS socket as far as the sink uses it: buffered bytes grow with each send; sends past the max are dropped. */
class SlowSocket {
  buffered = 0;
  sent: { data: string | Uint8Array; binary: boolean }[] = [];
  ended: { code: number; reason: string } | null = null;
  cork(fn: () => void) {
    fn();
    return this;
  }
  getBufferedAmount() {
    return this.buffered;
  }
  send(data: string | Uint8Array, binary: boolean): number {
    const size = typeof data === 'string' ? Buffer.byteLength(data) : data.byteLength;
    if (this.buffered + size > BACKPRESSURE.max_backpressure_bytes) return SEND_DROPPED;
    this.sent.push({ data, binary });
    this.buffered += size;
    return this.buffered > 0 ? SEND_BACKPRESSURE : SEND_OK;
  }
  end(code: number, reason: string) {
    this.ended = { code, reason };
  }
}

function setup() {
  const ws = new SlowSocket();
  const state: SocketState = { closed: false, paused: false };
  const sink = new SocketSink(ws as unknown as WebSocket<SocketState>, state);
  return { ws, state, sink };
}

const FRAME = new Uint8Array(320); // 20 ms of pcm_8000

t.test('assistant audio pauses above the high-water mark and resumes on drain', async (t) => {
  const { ws, sink } = setup();
  const client = new StsClient(sink);
  client.binaryAudio = true;
  let accepted = 0;
  for (let i = 0; i < 1000 && client.sendAudio(FRAME, ''); i++) accepted++;
  const bound = Math.ceil(BACKPRESSURE.audio_high_water_bytes / FRAME.byteLength) + 1;
  t.ok(accepted <= bound, `a client that never reads holds at most ${bound} frames on the socket (${accepted})`);
  t.ok(ws.buffered <= BACKPRESSURE.audio_high_water_bytes + FRAME.byteLength, 'buffered bytes stay under the mark');
  t.notOk(client.sendAudio(FRAME, ''), 'further frames are refused (the conversation keeps them)');

  ws.buffered = BACKPRESSURE.audio_low_water_bytes + 1;
  sink.drained();
  t.notOk(client.sendAudio(FRAME, ''), 'a drain above the low-water mark does not resume');
  ws.buffered = BACKPRESSURE.audio_low_water_bytes - 1;
  sink.drained();
  t.ok(client.sendAudio(FRAME, ''), 'a drain below the low-water mark resumes audio');
  t.equal(ws.ended, null, 'audio backpressure never closes the socket');
});

t.test('base64 audio follows the same mark', async (t) => {
  const { ws, sink } = setup();
  const client = new StsClient(sink);
  let accepted = 0;
  for (let i = 0; i < 1000 && client.sendAudio(FRAME, 'hi'); i++) accepted++;
  t.ok(accepted < 1000, `JSON audio stops too (${accepted} frames)`);
  t.ok(
    ws.sent.every((s) => !s.binary),
    'as text frames',
  );
  t.match(JSON.parse(ws.sent[0].data as string), { type: 'audio_chunk', text: 'hi' }, 'audio_chunk events');
});

t.test(
  'binary audio: a frame with text sends neither while backed up; a frame alone asks the socket once',
  async (t) => {
    const { ws, sink } = setup();
    const client = new StsClient(sink);
    client.binaryAudio = true;
    let asked = 0;
    const buffered = ws.getBufferedAmount.bind(ws);
    ws.getBufferedAmount = () => (asked++, buffered());
    t.ok(client.sendAudio(FRAME, ''));
    t.equal(asked, 1, 'one getBufferedAmount per frame');
    ws.buffered = BACKPRESSURE.audio_high_water_bytes + 1;
    const sent = ws.sent.length;
    t.notOk(client.sendAudio(FRAME, 'hello'), 'refused while backed up');
    t.notOk(client.sendAudio(FRAME, ''), 'a frame alone too');
    t.equal(ws.sent.length, sent, 'neither the text nor the audio went out');
    ws.buffered = 0;
    sink.drained();
    t.ok(client.sendAudio(FRAME, 'hello'), 'after the drain');
    t.same(
      ws.sent.slice(sent).map((s) => s.binary),
      [false, true],
      'the text event, then its audio',
    );
  },
);

t.test('a control event that would be dropped closes the socket with 1008', async (t) => {
  const { ws, state, sink } = setup();
  const client = new StsClient(sink);
  ws.buffered = BACKPRESSURE.max_backpressure_bytes - 10;
  client.send({ type: 'user_started_speaking' });
  t.same(ws.ended?.code, CLOSE_BACKPRESSURE, 'closed: policy violation');
  t.ok(state.closed, 'the sink is closed');
  t.notOk(client.sendAudio(FRAME, ''), 'nothing more is sent');
});

t.test('observer audio is dropped while the observer is backed up; events still go', async (t) => {
  const { ws } = setup();
  const sink = new SocketSink(ws as unknown as WebSocket<SocketState>, { closed: false, paused: false });
  const feed = observerFeed(sink);
  ws.buffered = BACKPRESSURE.audio_high_water_bytes + 1;
  feed.audio('user', new Int16Array(320), 16000);
  t.equal(ws.sent.length, 0, 'audio dropped');
  feed.event({ type: 'user_started_speaking' });
  t.equal(ws.sent.length, 1, 'the event went out');
  feed.closed('user');
  t.match(
    JSON.parse(ws.sent[1].data as string),
    { type: 'conversation_ended', ended_by: 'user' },
    'the end is announced',
  );
  t.equal(ws.ended?.code, 1000, 'and the observer closed normally');
});

t.test('a relay sink offers audio only while the holding worker has not reported a pause', async (t) => {
  const posted: WorkerNotice[] = [];
  let ended = 0;
  const sink = new RelaySink(
    7,
    (n) => posted.push(n),
    () => ended++,
  );
  const client = new StsClient(sink);
  t.ok(client.sendAudio(FRAME, ''), 'audio goes out before any report');
  sink.flow(true);
  t.notOk(sink.writable, 'paused by the report');
  t.notOk(client.sendAudio(FRAME, ''), 'audio is refused (the conversation keeps it)');
  client.send({ type: 'assistant_finished_speaking' });
  t.equal(posted.length, 2, 'events still go out while paused');
  sink.flow(false);
  t.ok(client.sendAudio(FRAME, ''), 'resumed by the next report');
  sink.end(1000, 'done');
  sink.end(1000, 'done');
  t.same(posted.filter((n) => n.type === 'relay_closed').length, 1, 'the relay is closed once');
  t.equal(ended, 1, 'and its owner forgets it');
  t.notOk(sink.writable, 'nothing goes out after the end');
});

t.test('a relay closed from the socket side is detached without a notice', async (t) => {
  const posted: WorkerNotice[] = [];
  let ended = 0;
  const sink = new RelaySink(
    8,
    (n) => posted.push(n),
    () => ended++,
  );
  sink.detach();
  t.equal(ended, 1, 'forgotten by its owner');
  t.notOk(sink.text('{}'), 'no more text');
  t.same(posted, [], 'nothing posted');
});
