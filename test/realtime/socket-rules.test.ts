// The STS socket's rules for what a client sends (docs/sts-protocol.md, "Frames", "Limits", "Closing"): a first
// frame that is not JSON is an invalid config (1008); a socket that never sends config is closed after the config
// timeout; audio chunks over 40 ms or of odd bytes of 16-bit PCM are refused with an error naming the limit; unmasked
// client frames never make a conversation; and the node is ready (its API answers) only once its realtime port
// accepts.
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import t from 'tap';
import { startRealtimeServer, TestClient } from '../helpers/realtime.js';
import { createTempDatabase } from '../helpers/temp-database.js';
import { RawClient } from './raw-client.js';
import { spawnNode } from './node-process.js';

t.setTimeout(240_000);

const CONFIG = { type: 'config', input_format: 'pcm_16000', output_format: 'pcm_16000' } as const;
/** 20 ms of pcm_16000. */
const FRAME_BYTES = 640;
const CONFIG_TIMEOUT_SEC = 1;

/** Resolves with the close, or null when the socket is still open after `ms`. */
function closedWithin(client: TestClient, ms: number): Promise<{ code: number; reason: string } | null> {
  let timer: NodeJS.Timeout;
  return Promise.race([client.closed, new Promise<null>((r) => (timer = setTimeout(() => r(null), ms)))]).finally(() =>
    clearTimeout(timer),
  );
}

function codes(client: TestClient): string[] {
  return client.events('error').map((e) => (e.error as { code: string }).code);
}

t.test('what a client sends on the STS socket', async (t) => {
  const server = await startRealtimeServer({ env: { PARLEY_STS_CONFIG_TIMEOUT_SEC: String(CONFIG_TIMEOUT_SEC) } });
  t.teardown(() => server.close());
  const auth = { authorization: `Bearer ${server.apiKey}` };
  const sts = `${server.wsUrl}/v1/sts/ws`;

  t.test('a first frame that is not JSON: invalid_config, closed with 1008', async (t) => {
    const c = await TestClient.open(sts, auth);
    c.ws.send('this is not json');
    const closed = await closedWithin(c, 5_000);
    t.equal(closed?.code, 1008);
    t.same(codes(c), ['invalid_config']);
  });

  t.test('a socket that never sends config is closed after the config timeout', async (t) => {
    const c = await TestClient.open(sts, auth);
    const closed = await closedWithin(c, CONFIG_TIMEOUT_SEC * 1000 * 5);
    t.equal(closed?.code, 1008, 'closed with 1008');
    t.same(codes(c), ['config_timeout']);
  });

  t.test('audio chunks over 40 ms, or of odd bytes of 16-bit PCM, are refused with the limit named', async (t) => {
    const c = await TestClient.open(sts, auth);
    c.send(CONFIG);
    await c.untilEvent('ready_to_start_conversation');
    c.send({ type: 'audio_chunk', audio: Buffer.alloc(FRAME_BYTES * 3).toString('base64') });
    c.send({ type: 'audio_chunk', audio: Buffer.alloc(FRAME_BYTES + 1).toString('base64') });
    c.send({ type: 'audio_chunk', audio: Buffer.alloc(FRAME_BYTES * 2).toString('base64') });
    await c.untilEvent('error', 2);
    const errors = c.events('error').map((e) => e.error as { code: string; message: string });
    t.same(
      errors.map((e) => e.code),
      ['invalid_audio', 'invalid_audio'],
      'two refused, the 40 ms chunk taken',
    );
    t.match(errors[0].message, /at most 40 ms: 1280 bytes of pcm_16000/);
    t.match(errors[1].message, /even number of bytes/);
    c.close();

    const binary = await TestClient.open(sts, auth);
    binary.send({ ...CONFIG, binary_audio: true });
    await binary.untilEvent('ready_to_start_conversation');
    binary.ws.send(Buffer.alloc(FRAME_BYTES * 3), { binary: true });
    await binary.untilEvent('error');
    t.same(codes(binary), ['invalid_audio'], 'a binary frame over 40 ms too');
    binary.close();
  });

  t.test('unmasked client frames (RFC 6455 5.1) never make a conversation; the socket is closed', async (t) => {
    const [{ before }] = await server.sql<{ before: number }[]>`select count(*)::int as before from conversations`;
    // uWS does not check the MASK bit: it reads the first four payload bytes as the mask, so the frame arrives
    // garbled, or not at all while uWS waits for bytes that never come.
    const payload = Buffer.from(JSON.stringify(CONFIG));
    for (const trailing of [false, true]) {
      const raw = await RawClient.open(server.pool.port, '/v1/sts/ws', auth);
      const closed = new Promise<void>((r) => raw.socket.once('close', () => r()));
      raw.socket.write(Buffer.concat([Buffer.from([0x81, payload.length]), payload]));
      if (trailing) raw.socket.write(Buffer.concat([Buffer.from([0x81, payload.length]), payload]));
      let timer: NodeJS.Timeout;
      const outcome = await Promise.race([
        closed.then(() => 'closed'),
        new Promise((r) => (timer = setTimeout(() => r('open'), CONFIG_TIMEOUT_SEC * 1000 * 5))),
      ]);
      clearTimeout(timer!);
      t.equal(outcome, 'closed', `closed (${trailing ? 'garbled frames' : 'a frame uWS waits on'})`);
      raw.socket.destroy();
    }
    const [{ after }] = await server.sql<{ after: number }[]>`select count(*)::int as after from conversations`;
    t.equal(after, before, 'no conversation was made');
  });
});

/** A TCP port free now on 127.0.0.1. */
function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

t.test('readiness: once the API answers, the realtime port accepts conversations', async (t) => {
  const db = await createTempDatabase('parley_test_ready');
  t.teardown(db.drop);
  const key = `bootstrap-${randomBytes(12).toString('hex')}`;
  const [http, ws] = [await freePort(), await freePort()];
  const node = spawnNode({
    DATABASE_URL: db.url,
    PARLEY_BOOTSTRAP_API_KEY: key,
    PARLEY_HTTP_PORT: String(http),
    PARLEY_WS_PORT: String(ws),
  });
  t.teardown(() => node.kill('SIGKILL'));
  // A client that starts a conversation as soon as the API answers.
  for (;;) {
    const ok = await fetch(`http://127.0.0.1:${http}/v1/projects`, {
      headers: { authorization: `Bearer ${key}` },
    }).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    await new Promise((r) => setTimeout(r, 10));
  }
  const client = await TestClient.open(`ws://127.0.0.1:${ws}/v1/sts/ws`, { authorization: `Bearer ${key}` });
  client.send(CONFIG);
  await client.untilEvent('conversation_created');
  t.equal(client.events('conversation_created').length, 1, 'the conversation starts');
  await node.waitFor(/"msg":"parley ready"/);
  client.close();
  node.kill('SIGTERM');
  t.equal(await node.exited, null);
});
