// A database outage mid-conversation (docs/ARCHITECTURE.md, "Data"): a real node reaches PostgreSQL through a TCP
// proxy that the test cuts for ten seconds and restores. Every reply the client heard is on the record, in order;
// the REST API answers 503 with Retry-After while the database is away, never 500, and never hangs.
import t from 'tap';
import { createTempDatabase } from '../helpers/temp-database.js';
import { endedConversation, TestClient } from '../helpers/realtime.js';
import { startNode } from './node-process.js';
import { startTcpProxy } from './tcp-proxy.js';

t.setTimeout(300_000);

const KEY = 'bootstrap-key-for-outage-tests-0123456789';
const OUTAGE_MS = 10_000;
/** Replies spoken before the cut, and after the database is back. */
const BEFORE = 3;
const AFTER = 3;
/** A REST request not answered within this is taken as hung (the connect timeout is 5 s). */
const REQUEST_GIVE_UP_MS = 8_000;
const POLL_MS = 500;

t.test('a 10 s database outage mid-conversation loses nothing the client heard', async (t) => {
  const db = await createTempDatabase('parley_test_outage');
  t.teardown(db.drop);
  const url = new URL(db.url);
  const proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port || 5432) });
  t.teardown(() => proxy.close());
  url.port = String(proxy.port);
  const node = await startNode({ DATABASE_URL: url.toString(), PARLEY_BOOTSTRAP_API_KEY: KEY });
  t.teardown(() => node.kill('SIGKILL'));
  const headers = { authorization: `Bearer ${KEY}` };

  const client = await TestClient.open(`${node.wsUrl}/v1/sts/ws`, headers);
  client.send({ type: 'config', input_format: 'pcm_16000', output_format: 'pcm_16000' });
  await client.untilEvent('ready_to_start_conversation');
  const id = String(client.events('conversation_created')[0]?.conversation_id);
  const said: string[] = [];
  const say = async (text: string) => {
    const heard = client.events('assistant_finished_speaking').length;
    client.send({ type: 'say', text });
    await client.untilEvent('assistant_finished_speaking', heard + 1);
    said.push(text);
  };

  // The REST API, asked all along.
  const answers: { status: number; retryAfter: string | null; during: boolean }[] = [];
  let hung = 0;
  let outage = false;
  let polling = true;
  const poll = (async () => {
    while (polling) {
      const during = outage;
      try {
        const res = await fetch(`${node.url}/v1/conversations/${id}`, {
          headers,
          signal: AbortSignal.timeout(REQUEST_GIVE_UP_MS),
        });
        answers.push({ status: res.status, retryAfter: res.headers.get('retry-after'), during });
        await res.arrayBuffer();
      } catch {
        hung++;
      }
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  })();

  for (let i = 0; i < BEFORE; i++) await say(`Before ${i}.`);
  outage = true;
  proxy.cut();
  const cutAt = Date.now();
  let during = 0;
  while (Date.now() - cutAt < OUTAGE_MS) {
    await say(`During ${during++}.`);
  }
  proxy.restore();
  outage = false;
  for (let i = 0; i < AFTER; i++) await say(`After ${i}.`);
  client.close();
  const c = await endedConversation(
    (p) => fetch(`${node.url}${p}`, { headers }).then(async (r) => ({ status: r.status, body: await r.json() })),
    id,
    90_000,
  );
  polling = false;
  await poll;

  t.ok(during > 0, `replies were spoken during the outage (${during})`);
  t.same(
    c.items.map((i: { live_transcript: string }) => i.live_transcript),
    said,
    `every reply heard is on the record, in order (${said.length})`,
  );
  t.equal(c.ended_by, 'user');
  const unavailable = answers.filter((a) => a.status === 503);
  t.ok(unavailable.length > 0, `the API answered 503 while the database was away (${unavailable.length} times)`);
  t.ok(
    unavailable.every((a) => a.retryAfter !== null && Number(a.retryAfter) > 0),
    'each with Retry-After',
  );
  t.same(
    answers.filter((a) => a.status !== 200 && a.status !== 503),
    [],
    'nothing but 200 and 503 (no 500)',
  );
  t.equal(hung, 0, `no request went unanswered for ${REQUEST_GIVE_UP_MS} ms`);
  t.ok(
    answers.some((a) => !a.during && a.status === 200),
    'served again once it was back',
  );
  const leases = await fetch(`${node.url}/v1/projects/main`, { headers }).then(
    (r) => r.json() as Promise<{ project: { active_conversations: number } }>,
  );
  t.equal(leases.project.active_conversations, 0, 'its slot is free');
  node.kill('SIGTERM');
  t.equal(await node.exited, null, 'the node stops cleanly');
});
