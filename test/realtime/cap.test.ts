// The concurrency cap under parallel connects: a project's max_active_conversations holds when many
// clients configure at once; refused ones get an error and a closed socket; a freed slot is usable again.
import t from 'tap';
import { api } from '../helpers/server.js';
import { startRealtimeServer } from '../helpers/realtime.js';

t.setTimeout(180_000);

const CAP = 2;
const CLIENTS = 6;

t.test('max_active_conversations under parallel connects', async (t) => {
  const server = await startRealtimeServer({ workers: 2, env: { PARLEY_RECONNECT_GRACE_SEC: '0' } });
  t.teardown(() => server.close());
  await server.sql`update projects set max_active_conversations = ${CAP} where id = ${server.projectId}`;
  const clients = await Promise.all(Array.from({ length: CLIENTS }, () => server.openSts()));
  for (const c of clients) c.send({ type: 'config', input_format: 'pcm_16000', output_format: 'pcm_16000' });
  await Promise.all(
    clients.map((c) => c.until(() => c.events('conversation_created').length > 0 || c.events('error').length > 0)),
  );
  const admitted = clients.filter((c) => c.events('conversation_created').length > 0);
  const refused = clients.filter((c) => c.events('error').length > 0);
  t.equal(admitted.length, CAP, `exactly ${CAP} conversations admitted`);
  t.equal(refused.length, CLIENTS - CAP, 'the others refused');
  for (const c of refused) {
    t.equal(
      (c.events('error')[0].error as { code: string }).code,
      'max_active_conversations_reached',
      'refusal names the cap',
    );
    await c.closed;
  }
  const project = await api(server).get('/v1/projects/main');
  t.equal(project.body.project.active_conversations, CAP, 'the project reports its active conversations');

  // A slot freed by an ended conversation admits the next client.
  const first = admitted[0];
  const id = String(first.events('conversation_created')[0].conversation_id);
  first.close();
  await server.endedConversation(id);
  const next = await server.openSts();
  next.send({ type: 'config', input_format: 'pcm_16000', output_format: 'pcm_16000' });
  await next.until(() => next.events('conversation_created').length > 0 || next.events('error').length > 0);
  t.equal(next.events('conversation_created').length, 1, 'a freed slot is taken again');
  next.close();
  admitted[1].close();
});
