// The bootstrap of an empty database: nodes that start together on one PostgreSQL make exactly one first workspace
// (the others find it and start), whatever the interleaving; a database with a workspace is left as it is.
import postgres from 'postgres';
import t from 'tap';
import { createLogger } from '../../src/log.js';
import { migrate } from '../../src/store/migrate.js';
import { bootstrap, BOOTSTRAP_WORKSPACE } from '../../src/store/workspaces.js';
import { createTempDatabase } from '../helpers/temp-database.js';

t.setTimeout(120_000);

/** Nodes starting at once, each with its own connection pool. */
const NODES = 4;
/** Empty databases raced on: a race the lock did not close would show in some of them. */
const ROUNDS = 8;

t.test('nodes bootstrapping one empty PostgreSQL at once make one workspace', async (t) => {
  const db = await createTempDatabase('parley_test_bootstrap');
  const pools = Array.from({ length: NODES }, () => postgres(db.url, { max: 2, onnotice: () => {} }));
  t.teardown(async () => {
    await Promise.all(pools.map((p) => p.end()));
    await db.drop();
  });
  await migrate(pools[0]!, createLogger('silent'));
  for (let round = 0; round < ROUNDS; round++) {
    await pools[0]!`truncate organizations cascade`;
    // Every pool holds an open connection first, so the bootstraps start together.
    await Promise.all(pools.map((p) => p`select 1`));
    const results = await Promise.allSettled(pools.map((p) => bootstrap(p, `bootstrap-key-round-${round}-0123456789`)));
    const failed = results.filter((r) => r.status === 'rejected');
    t.same(
      failed.map((r) => String((r as PromiseRejectedResult).reason)),
      [],
      `round ${round}: no node failed to start`,
    );
    const made = results.filter((r) => r.status === 'fulfilled' && r.value !== null);
    t.equal(made.length, 1, `round ${round}: one node made the first workspace, the others found it`);
    const orgs = await pools[0]!<{ name: string }[]>`select name from organizations`;
    t.same(
      orgs.map((o) => o.name),
      [BOOTSTRAP_WORKSPACE],
      'one workspace in the database',
    );
  }
  t.equal(
    await bootstrap(pools[1]!, 'another-key-0123456789abcdef'),
    null,
    'a database with a workspace is left as it is',
  );
});
