// The worker's request client (src/workers/main-client.ts): each request gets its own id, is settled by the
// reply with that id (value or MainRequestError with main's status and code), and fails on its own after the
// timeout; a late reply is ignored; failAll rejects what is waiting.
import t from 'tap';
import { MainClient, MainRequestError } from '../../src/workers/main-client.js';
import type { WorkerMessage, WorkerRequest } from '../../src/workers/worker-protocol.js';

function setup(timeoutMs = 1_000) {
  const posted: WorkerMessage[] = [];
  const client = new MainClient({ postMessage: (m) => posted.push(m) }, timeoutMs);
  return { posted, client };
}

t.test('replies settle the request with the same id', async (t) => {
  const { posted, client } = setup();
  const a = client.request('resolve_project', { orgId: 'org_1', project: 'main' });
  const b = client.request('admit', { orgId: 'org_1', projectId: 'proj_1', conversationId: 'conv_1' });
  const [ra, rb] = posted as WorkerRequest[];
  t.not(ra.id, rb.id, 'distinct ids');
  t.match(ra, { type: 'resolve_project', orgId: 'org_1', project: 'main' }, 'the payload goes as posted');
  client.handleReply({
    type: 'reply',
    id: rb.id,
    ok: false,
    error: { message: 'no', status: 403, code: 'ip_not_allowed' },
  });
  client.handleReply({ type: 'reply', id: ra.id, ok: true, value: { id: 'proj_1', name: 'main' } });
  t.same(await a, { id: 'proj_1', name: 'main' }, 'value of its own reply');
  const err = await b.catch((e: unknown) => e);
  t.ok(err instanceof MainRequestError, 'an error reply rejects with MainRequestError');
  t.match(err, { status: 403, code: 'ip_not_allowed', requestType: 'admit' }, "carrying main's status and code");
  t.equal(client.inFlight, 0, 'nothing left waiting');
});

t.test('a request main does not answer times out; its late reply is ignored', async (t) => {
  t.capture(globalThis, 'setTimeout', ((fn: () => void) => {
    queueMicrotask(fn); // the timeout fires at once: no waiting in tests
    return 0 as unknown as NodeJS.Timeout;
  }) as typeof setTimeout);
  const { posted, client } = setup(10_000);
  const p = client.request('authenticate', { secret: 'pk_x', clientAddress: '127.0.0.1' });
  const err = await p.catch((e: unknown) => e);
  t.match(err, { name: 'MainRequestError', status: 504, code: 'main_timeout' }, 'rejected as a timeout');
  client.handleReply({ type: 'reply', id: (posted[0] as WorkerRequest).id, ok: true, value: null });
  t.equal(client.inFlight, 0, 'the late reply changes nothing');
});

t.test('failAll rejects every waiting request', async (t) => {
  const { client } = setup();
  const ps = [
    client.request('resolve_tools', { orgId: 'o', projectId: 'p', names: [] }),
    client.request('append_items', { conversationId: 'c', items: [] }),
  ];
  client.failAll('main went away');
  for (const p of ps) t.match(await p.catch((e: unknown) => e), { code: 'main_gone' }, 'rejected');
});
