// Migration 20261122000400 (the conversations' next_item_idx counter) on a database that already holds items:
// each conversation's counter starts after its last item, so the first append after the upgrade neither collides
// with nor skips past what is stored. PostgreSQL only: it needs a database stopped at the migration before, and a
// fresh embedded one costs seconds and ~760 MB (docs/peers.md); the SQL is the same on both.
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import t from 'tap';
import { createLogger } from '../../src/log.js';
import { migrate, migrationFiles, MIGRATIONS_DIR } from '../../src/store/migrate.js';
import { bootstrap } from '../../src/store/workspaces.js';
import { appendItems, createConversation, getConversation } from '../../src/store/conversations.js';
import { createTempDatabase } from '../helpers/temp-database.js';

const COUNTER_MIGRATION = '20261122000400_conversation_item_counter.sql';
const log = createLogger('silent');

t.test('existing conversations continue after their last stored item', async (t) => {
  const db = await createTempDatabase();
  const sql = postgres(db.url, { max: 2, onnotice: () => {} });
  const before = mkdtempSync(join(tmpdir(), 'parley-migrations-'));
  t.teardown(async () => {
    rmSync(before, { recursive: true, force: true });
    await sql.end();
    await db.drop();
  });

  for (const f of migrationFiles().filter((f) => f < COUNTER_MIGRATION))
    copyFileSync(join(MIGRATIONS_DIR, f), join(before, f));
  await migrate(sql, log, before);
  const ws = (await bootstrap(sql))!;
  const withItems = await createConversation(sql, { orgId: ws.orgId, projectId: ws.projectId, origin: 'web' });
  const empty = await createConversation(sql, { orgId: ws.orgId, projectId: ws.projectId, origin: 'web' });
  // Items as the code before the counter wrote them.
  for (const idx of [0, 1, 2]) {
    await sql`insert into conversation_items (id, conversation_id, item_idx, role, duration_ms, started_at)
      values (${`conv_item_old_${idx}`}, ${withItems}, ${idx}, 'user', 10, now())`;
  }

  // The counter migration and those after it (later ones do not touch these columns).
  t.same(
    await migrate(sql, log),
    migrationFiles().filter((f) => f >= COUNTER_MIGRATION),
  );
  t.equal(migrationFiles().filter((f) => f >= COUNTER_MIGRATION)[0], COUNTER_MIGRATION, 'starting with the counter');
  const counters = await sql<{ id: string; next_item_idx: number }[]>`
    select id, next_item_idx from conversations order by next_item_idx`;
  t.same(
    counters.map((r) => [r.id, r.next_item_idx]),
    [
      [empty, 0],
      [withItems, 3],
    ],
  );

  await appendItems(sql, withItems, [
    { role: 'assistant', live_transcript: 'after', duration_ms: 5, started_at: new Date() },
  ]);
  await appendItems(sql, empty, [{ role: 'user', live_transcript: 'first', duration_ms: 5, started_at: new Date() }]);
  t.same(
    (await getConversation(sql, withItems))!.record.items.map((i) => i.item_idx),
    [0, 1, 2, 3],
  );
  t.same(
    (await getConversation(sql, empty))!.record.items.map((i) => i.item_idx),
    [0],
  );
});
