// The throwaway-database helper the PostgreSQL tests share: a fresh database per call, reachable at its URL,
// dropped by drop() even while a connection to it is still open.
import postgres from 'postgres';
import t from 'tap';
import { createTempDatabase, POSTGRES_ADMIN_URL } from './temp-database.js';

async function exists(name: string): Promise<boolean> {
  const admin = postgres(POSTGRES_ADMIN_URL, { max: 1, onnotice: () => {} });
  try {
    return (await admin`select 1 from pg_database where datname = ${name}`).length === 1;
  } finally {
    await admin.end();
  }
}

t.test('two calls make two databases; each URL opens its own', async (t) => {
  const a = await createTempDatabase();
  const b = await createTempDatabase('parley_test_helper');
  t.teardown(async () => {
    await a.drop();
    await b.drop();
  });
  t.not(a.name, b.name);
  t.match(b.name, /^parley_test_helper_[0-9a-f]{12}$/);
  for (const db of [a, b]) {
    const sql = postgres(db.url, { max: 1, onnotice: () => {} });
    try {
      t.equal((await sql`select current_database() as name`)[0].name, db.name);
    } finally {
      await sql.end();
    }
  }
});

t.test('drop() ends the connections still open and drops the database; a second drop does nothing', async (t) => {
  const db = await createTempDatabase();
  const open = postgres(db.url, { max: 1, onnotice: () => {} });
  t.teardown(() => open.end({ timeout: 0 }));
  await open`create table kept (id int)`;
  t.ok(await exists(db.name));
  await db.drop();
  t.notOk(await exists(db.name), 'gone although a connection was open');
  await t.rejects(open`select 1`, 'the open connection was terminated (and cannot reconnect)');
  await db.drop();
});

t.test('a prefix that is not a plain identifier is refused before any SQL', async (t) => {
  await t.rejects(createTempDatabase('x; drop database test'), /prefix must match/);
});
