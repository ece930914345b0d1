// Migrations: applied in file-name order, once each, each in a transaction (a failing one leaves nothing and
// names its file); on both databases.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createLogger } from '../../src/log.js';
import { migrate, migrationFiles } from '../../src/store/migrate.js';
import { StoreError } from '../../src/store/errors.js';
import { DB_KINDS, startTestServer } from '../helpers/server.js';

t.setTimeout(300_000);
const log = createLogger('silent');

t.test('the shipped migrations are named by timestamp, foundation first', async (t) => {
  const files = migrationFiles();
  t.equal(files[0], '20261122000000_foundation.sql');
  t.same(files, [...files].sort());
});

for (const db of DB_KINDS) {
  t.test(`migrate on ${db}`, async (t) => {
    const server = await startTestServer({ db });
    t.teardown(() => server.close());
    const { sql } = server;
    const applied = await sql<{ name: string }[]>`select name from schema_migrations order by name`;
    t.same(
      applied.map((r) => r.name),
      migrationFiles(),
      'every shipped migration applied at start',
    );
    t.same(await migrate(sql, log), [], 'a second run applies nothing');

    const dir = mkdtempSync(join(tmpdir(), 'parley-migrations-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    // Written out of order: the runner sorts by name.
    writeFileSync(join(dir, '29990101000002_b.sql'), `insert into t_mig (v) values ('b');`);
    writeFileSync(
      join(dir, '29990101000001_a.sql'),
      `create table t_mig (n serial primary key, v text not null);\ninsert into t_mig (v) values ('a');`,
    );
    writeFileSync(join(dir, 'notes.txt'), 'not a migration');
    t.same(await migrate(sql, log, dir), ['29990101000001_a.sql', '29990101000002_b.sql']);
    t.same(
      (await sql<{ v: string }[]>`select v from t_mig order by n`).map((r) => r.v),
      ['a', 'b'],
    );

    writeFileSync(
      join(dir, '29990101000003_bad.sql'),
      `insert into t_mig (v) values ('c');\ninsert into t_mig (v) values (null);`,
    );
    const err = await migrate(sql, log, dir).then(
      () => null,
      (e: unknown) => e,
    );
    t.type(err, StoreError);
    t.match((err as Error).message, /29990101000003_bad\.sql/);
    t.same(
      (await sql<{ v: string }[]>`select v from t_mig order by n`).map((r) => r.v),
      ['a', 'b'],
      'the failed migration left nothing',
    );
    const [row] = await sql`select 1 from schema_migrations where name = '29990101000003_bad.sql'`;
    t.notOk(row, 'and is not recorded');
  });
}
