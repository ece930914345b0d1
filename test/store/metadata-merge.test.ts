// updateConversation's `metadata`: keys merged into the record's metadata (jsonb ||), so a live call's
// answering-machine result and main's record of a REFER, written by different threads, keep each other. Both
// databases.
import t from 'tap';
import { createConversation, updateConversation } from '../../src/store/conversations.js';
import { DB_KINDS, startTestServer } from '../helpers/server.js';

t.setTimeout(180_000);

for (const db of DB_KINDS) {
  t.test(`metadata keys merged on ${db}`, async (t) => {
    const server = await startTestServer({ db });
    t.teardown(() => server.close());
    const { sql, orgId, projectId } = server;
    const read = async (id: string) =>
      (await sql<{ metadata: unknown }[]>`select metadata from conversations where id = ${id}`)[0]?.metadata;

    const id = await createConversation(sql, { orgId, projectId, origin: 'telephony-outbound' });
    t.equal(await read(id), null, 'none at first');
    t.ok(
      await updateConversation(sql, id, { metadata: { answering_machine: { result: 'machine', beep_at_ms: 3628 } } }),
    );
    t.ok(await updateConversation(sql, id, { metadata: { sip_refers: [{ status: 200 }] } }));
    t.same(
      await read(id),
      { answering_machine: { result: 'machine', beep_at_ms: 3628 }, sip_refers: [{ status: 200 }] },
      'each key kept',
    );
    t.ok(await updateConversation(sql, id, { metadata: { sip_refers: [{ status: 200 }, { status: 486 }] } }));
    t.same(
      ((await read(id)) as Record<string, unknown>).sip_refers,
      [{ status: 200 }, { status: 486 }],
      'a key given again is replaced',
    );
    t.ok(await updateConversation(sql, id, { state: 'active' }), 'an update without metadata');
    t.same(Object.keys((await read(id)) as object).sort(), ['answering_machine', 'sip_refers'], 'leaves it as it is');

    const other = await createConversation(sql, {
      orgId,
      projectId,
      origin: 'web',
      settings: { metadata: { customer: 'a' } },
    });
    t.ok(
      await updateConversation(sql, other, { state: 'active', metadata: { answering_machine: { result: 'human' } } }),
    );
    t.same(
      await read(other),
      { customer: 'a', answering_machine: { result: 'human' } },
      'merged with what the record was created with',
    );
  });
}
