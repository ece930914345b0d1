// Admission never leaks a slot (docs/sts-protocol.md, "Closing"): clients that close their socket right after
// `config` (while it is admitted, while its record is created), and configs whose record the database refuses,
// leave no lease held and no record open; a project at its cap takes new conversations again at once.
import t, { type Test } from 'tap';
import { startRealtimeServer, TestClient, type RealtimeServer } from '../helpers/realtime.js';

t.setTimeout(180_000);

const CAP = 2;
const CONFIG = { type: 'config', input_format: 'pcm_16000', output_format: 'pcm_16000' } as const;
/** Polls (100 ms apart) for leases and open records to settle. */
const POLLS = 100;

async function leftovers(server: RealtimeServer): Promise<{ leases: number; open: number }> {
  const [{ leases }] = await server.sql<{ leases: number }[]>`select count(*)::int as leases from conversation_leases`;
  const [{ open }] = await server.sql<
    { open: number }[]
  >`select count(*)::int as open from conversations where state <> 'ended'`;
  return { leases, open };
}

async function settled(server: RealtimeServer): Promise<{ leases: number; open: number }> {
  let last = await leftovers(server);
  for (let i = 0; i < POLLS && (last.leases > 0 || last.open > 0); i++) {
    await new Promise((r) => setTimeout(r, 100));
    last = await leftovers(server);
  }
  return last;
}

/** Both slots of the project can be taken again: two conversations start. */
async function slotsFree(t: Test, server: RealtimeServer, auth: Record<string, string>): Promise<void> {
  const clients = await Promise.all(
    Array.from({ length: CAP }, () => TestClient.open(`${server.wsUrl}/v1/sts/ws`, auth)),
  );
  for (const c of clients) c.send(CONFIG);
  await Promise.all(
    clients.map((c) =>
      c.until(() => c.events('ready_to_start_conversation').length > 0 || c.events('error').length > 0),
    ),
  );
  t.same(
    clients.flatMap((c) => c.events('error')),
    [],
    `both of the project's ${CAP} slots are free`,
  );
  for (const c of clients) c.close();
  await Promise.all(clients.map((c) => c.closed));
  await settled(server);
}

t.test('admission under early hang-ups and refused records', async (t) => {
  const server = await startRealtimeServer({ env: { PARLEY_RECONNECT_GRACE_SEC: '60' } });
  t.teardown(() => server.close());
  await server.sql`update projects set max_active_conversations = ${CAP} where id = ${server.projectId}`;
  const auth = { authorization: `Bearer ${server.apiKey}` };
  const sts = `${server.wsUrl}/v1/sts/ws`;

  t.test('sockets closed right after config, by a close frame or a dropped connection', async (t) => {
    for (let round = 0; round < 3; round++) {
      const clients = await Promise.all(Array.from({ length: CAP * 2 }, () => TestClient.open(sts, auth)));
      for (const [i, c] of clients.entries()) {
        c.send({ ...CONFIG, external_id: `early-${round}-${i}` });
        if (i % 2 === 0) c.close();
        else c.ws.terminate();
      }
      await Promise.all(clients.map((c) => c.closed));
      t.same(await settled(server), { leases: 0, open: 0 }, `round ${round}: no lease held, no record open`);
    }
    await slotsFree(t, server, auth);
  });

  t.test('a socket closed while its record is being created', async (t) => {
    // The record's insert takes a while (a trigger sleeps), so the close lands after admission, before the record.
    await server.sql.unsafe(`
      create function slow_insert() returns trigger language plpgsql as $$
      begin perform pg_sleep(0.5); return new; end $$;
      create trigger slow_insert before insert on conversations for each row
        when (new.external_id like 'slow-%') execute function slow_insert();`);
    t.teardown(() => server.sql.unsafe('drop trigger slow_insert on conversations; drop function slow_insert();'));
    for (let i = 0; i < CAP * 2; i++) {
      const c = await TestClient.open(sts, auth);
      c.send({ ...CONFIG, external_id: `slow-${i}` });
      await new Promise((r) => setTimeout(r, 150));
      if (i % 2 === 0) c.close();
      else c.ws.terminate();
      await c.closed;
    }
    t.same(await settled(server), { leases: 0, open: 0 }, 'no lease held, no record open');
    const rows = await server.sql<
      { ended_by: string }[]
    >`select ended_by from conversations where external_id like 'slow-%'`;
    t.ok(
      rows.length > 0 && rows.every((r) => r.ended_by === 'user'),
      `the records made meanwhile are finished (${rows.length})`,
    );
    await slotsFree(t, server, auth);
  });

  t.test('configs whose record the database refuses: a clean error, the slot released', async (t) => {
    // A NUL character the database cannot store (text columns refuse it), and any insert a trigger refuses.
    await server.sql.unsafe(`
      create function refuse_insert() returns trigger language plpgsql as $$
      begin raise exception 'invalid byte sequence for encoding "UTF8": 0x00' using errcode = '22021'; end $$;
      create trigger refuse_insert before insert on conversations for each row
        when (new.external_id = 'refused') execute function refuse_insert();`);
    t.teardown(() => server.sql.unsafe('drop trigger refuse_insert on conversations; drop function refuse_insert();'));
    const configs = [
      { ...CONFIG, external_id: 'refused' },
      { ...CONFIG, external_id: 'nul \u0000 inside' },
      { ...CONFIG, welcome_message: 'Hello \u0000.' },
      { ...CONFIG, system_prompt: 'You are \u0000 helpful.' },
      { ...CONFIG, template_variables: { name: 'A\u0000da' } },
    ];
    for (const [i, config] of [...configs, ...configs].entries()) {
      const c = await TestClient.open(sts, auth);
      c.send(config);
      const { code } = await c.closed;
      const [error] = c.events('error') as { error: { message: string; code: string } }[];
      t.ok(error, `config ${i}: told with an error event`);
      t.notMatch(
        error?.error.message ?? '',
        /byte sequence|UTF8|0x00|unsupported Unicode/,
        `config ${i}: nothing of the database in it`,
      );
      t.equal(error?.error.code, 'invalid_config', `config ${i}: invalid_config`);
      t.equal(code, 1008, `config ${i}: closed with 1008`);
    }
    t.same(await settled(server), { leases: 0, open: 0 }, 'no lease held, no record open');
    await slotsFree(t, server, auth);
  });
});
