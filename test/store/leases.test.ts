// The per-project concurrency cap counted in the database: atomic admission under parallel requests, release,
// renewal by heartbeat, and expiry freeing a dead node's share. Runs on both databases.
import t from 'tap';
import { DB_KINDS, startTestServer } from '../helpers/server.js';
import {
  activeCount,
  activeCounts,
  admit,
  checkCapacity,
  HEARTBEATS_PER_TTL,
  leasePolicy,
  release,
  renew,
  startHeartbeat,
  type HeartbeatTimer,
  type LeasePolicy,
} from '../../src/store/leases.js';
import { createLogger } from '../../src/log.js';
import { createConversation, finishConversation } from '../../src/store/conversations.js';

const PARALLEL = 12;
const CAP = 5;

// Two databases, each a fresh server: more than tap's default file timeout on a loaded machine.
t.setTimeout(300_000);

for (const db of DB_KINDS) {
  t.test(`leases on ${db}`, { timeout: 180_000 }, async (t) => {
    const server = await startTestServer({ db });
    t.teardown(() => server.close());
    const { sql, projectId, orgId } = server;
    const nodeA: LeasePolicy = { nodeId: 'node-a', ttlSec: 30, workspaceCap: 100 };
    const nodeB: LeasePolicy = { nodeId: 'node-b', ttlSec: 30, workspaceCap: 100 };

    t.test('N parallel admissions against cap K: exactly K succeed', async (t) => {
      await sql`update projects set max_active_conversations = ${CAP} where id = ${projectId}`;
      const results = await Promise.all(
        Array.from({ length: PARALLEL }, (_, i) => admit(sql, i % 2 ? nodeA : nodeB, projectId, `conv_par_${i}`)),
      );
      const admitted = results.filter((r) => r.admitted);
      t.equal(admitted.length, CAP, 'exactly the cap is admitted');
      for (const r of results.filter((r) => !r.admitted)) {
        t.same(
          r,
          { admitted: false, reason: 'at_capacity', active: CAP, cap: CAP },
          'the rest are refused at capacity',
        );
      }
      t.equal(await activeCount(sql, projectId), CAP, 'the project counts K active conversations');
      t.same(
        await checkCapacity(sql, nodeA, projectId),
        { ok: false, active: CAP, cap: CAP },
        'a dry check sees the cap',
      );
    });

    t.test('re-admitting a held conversation renews it and counts once', async (t) => {
      const [held] = await sql<{ conversation_id: string }[]>`
        select conversation_id from conversation_leases where project_id = ${projectId} limit 1`;
      const again = await admit(sql, nodeA, projectId, held.conversation_id);
      t.equal(again.admitted, true);
      t.equal(await activeCount(sql, projectId), CAP);
    });

    t.test('release frees one place', async (t) => {
      const [held] = await sql<{ conversation_id: string }[]>`
        select conversation_id from conversation_leases where project_id = ${projectId} limit 1`;
      t.equal(await release(sql, held.conversation_id), true);
      t.equal(await release(sql, held.conversation_id), false, 'a second release finds nothing');
      t.equal(await activeCount(sql, projectId), CAP - 1);
      const next = await admit(sql, nodeA, projectId, 'conv_after_release');
      t.equal(next.admitted, true, 'the freed place is taken');
      const over = await admit(sql, nodeA, projectId, 'conv_over');
      t.equal(over.admitted, false, 'and the cap holds again');
    });

    t.test('a dead node frees its share when its leases expire; a live node keeps its own by heartbeat', async (t) => {
      // Start from a known split of the cap: node A holds 2, node B the rest.
      await sql`delete from conversation_leases`;
      const heldByB = CAP - 2;
      for (let i = 0; i < CAP; i++) {
        const a = await admit(sql, i < 2 ? nodeA : nodeB, projectId, `conv_split_${i}`);
        t.equal(a.admitted, true);
      }
      t.equal(await activeCount(sql, projectId), CAP, 'the project is at its cap');
      // Node A keeps beating; node B stops. Time passes beyond the TTL for B's leases only:
      t.ok((await renew(sql, nodeA)) > 0, 'node A renews its leases');
      await sql`update conversation_leases set expires_at = now() - interval '1 second' where node_id = 'node-b'`;
      t.equal(await activeCount(sql, projectId), CAP - heldByB, 'expired leases no longer count');
      const results = await Promise.all(
        Array.from({ length: PARALLEL }, (_, i) => admit(sql, nodeA, projectId, `conv_takeover_${i}`)),
      );
      t.equal(results.filter((r) => r.admitted).length, heldByB, "exactly the dead node's share is admitted again");
      t.equal(await activeCount(sql, projectId), CAP);
      const [{ n }] = await sql<{ n: number }[]>`
        select count(*)::int as n from conversation_leases where node_id = 'node-b'`;
      t.equal(n, 0, "the dead node's expired leases are gone");
      const [beat] = await sql`select heartbeat_at from node_heartbeats where node_id = 'node-a'`;
      t.ok(beat, 'the heartbeat is recorded');
    });

    t.test('a project without its own cap uses the workspace limit', async (t) => {
      const [p] = await sql<{ id: string }[]>`
        insert into projects (id, org_id, name) values ('proj_capless', ${orgId}, 'capless') returning id`;
      const small: LeasePolicy = { nodeId: 'node-a', ttlSec: 30, workspaceCap: 2 };
      const results = await Promise.all([1, 2, 3, 4].map((i) => admit(sql, small, p.id, `conv_ws_${i}`)));
      t.equal(results.filter((r) => r.admitted).length, 2);
      const counts = await activeCounts(sql, [projectId, p.id, 'proj_none']);
      t.equal(counts.get(p.id), 2);
      t.equal(counts.get(projectId), CAP);
      t.equal(counts.has('proj_none'), false);
      t.same(await admit(sql, small, 'proj_none', 'conv_x'), { admitted: false, reason: 'no_project' });
    });

    t.test("the heartbeat renews this node's leases on its timer, and stops", async (t) => {
      await sql`delete from conversation_leases`;
      const policy: LeasePolicy = { nodeId: 'node-beat', ttlSec: 9, workspaceCap: 100 };
      t.equal((await admit(sql, policy, projectId, 'conv_beat')).admitted, true);
      await sql`update conversation_leases set expires_at = now() + interval '1 second' where conversation_id = 'conv_beat'`;
      const ticks: { ms: number; fn: () => void; cancelled: boolean }[] = [];
      const timer: HeartbeatTimer = {
        every(ms, fn) {
          const tick = { ms, fn, cancelled: false };
          ticks.push(tick);
          return { cancel: () => (tick.cancelled = true) };
        },
      };
      const hb = startHeartbeat(sql, policy, createLogger('silent'), timer);
      t.equal(ticks.length, 1);
      t.equal(ticks[0].ms, (9 * 1000) / HEARTBEATS_PER_TTL, 'beats HEARTBEATS_PER_TTL times per lease lifetime');
      ticks[0].fn();
      await hb.beat(); // joins the beat the tick started
      const [row] = await sql<{ left: number }[]>`
        select extract(epoch from expires_at - now())::float8 as left from conversation_leases where conversation_id = 'conv_beat'`;
      t.ok(row.left > 5, `the lease was extended to the full TTL (${row.left.toFixed(1)} s left)`);
      await hb.stop();
      t.equal(ticks[0].cancelled, true, 'stop cancels the timer');
      await release(sql, 'conv_beat');
    });

    t.test('a conversation whose own lease expired is admitted again only under the cap', async (t) => {
      await sql`delete from conversation_leases`;
      const [p] = await sql<{ id: string }[]>`
        insert into projects (id, org_id, name, max_active_conversations) values ('proj_rejoin', ${orgId}, 'rejoin', 2)
        returning id`;
      t.equal((await admit(sql, nodeA, p.id, 'conv_rejoin')).admitted, true);
      await sql`update conversation_leases set expires_at = now() - interval '1 second' where conversation_id = 'conv_rejoin'`;
      t.equal((await admit(sql, nodeB, p.id, 'conv_other_1')).admitted, true);
      t.equal((await admit(sql, nodeB, p.id, 'conv_other_2')).admitted, true, 'the expired lease does not count');
      t.same(await admit(sql, nodeA, p.id, 'conv_rejoin'), {
        admitted: false,
        reason: 'at_capacity',
        active: 2,
        cap: 2,
      });
      t.equal(await activeCount(sql, p.id), 2);
      t.equal(await release(sql, 'conv_other_2'), true);
      t.same(
        await admit(sql, nodeB, p.id, 'conv_rejoin'),
        { admitted: true, active: 2, cap: 2 },
        'a free place: taken again',
      );
      const [row] = await sql<{ node_id: string; live: boolean }[]>`
        select node_id, expires_at > now() as live from conversation_leases where conversation_id = 'conv_rejoin'`;
      t.same(row, { node_id: 'node-b', live: true }, 'by the node that admitted it now');
      t.same(
        await admit(sql, nodeA, p.id, 'conv_rejoin'),
        { admitted: true, active: 2, cap: 2 },
        'held: renewed, counted once',
      );
      await sql`delete from conversation_leases`;
    });

    t.test('the policy comes from the settings', async (t) => {
      const p = leasePolicy({
        PARLEY_NODE_ID: 'n7',
        PARLEY_LEASE_TTL_SEC: 12,
        PARLEY_WORKSPACE_MAX_ACTIVE_CONVERSATIONS: 3,
      });
      t.same(p, { nodeId: 'n7', ttlSec: 12, workspaceCap: 3 });
      const d = leasePolicy({
        PARLEY_NODE_ID: undefined,
        PARLEY_LEASE_TTL_SEC: 30,
        PARLEY_WORKSPACE_MAX_ACTIVE_CONVERSATIONS: 100,
      });
      t.match(d.nodeId, new RegExp(`-${process.pid}$`), 'default node id: <hostname>-<pid>');
    });

    t.test('finishing a conversation through the repository frees its lease', async (t) => {
      await sql`delete from conversation_leases`;
      const id = await createConversation(sql, {
        orgId,
        projectId,
        origin: 'web',
        state: 'active',
        started_at: new Date(),
      });
      t.equal((await admit(sql, nodeA, projectId, id)).admitted, true);
      t.equal(
        (await finishConversation(sql, id, { ended_by: 'assistant', ended_at: new Date(), duration_ms: 1200 })).ended,
        true,
      );
      t.equal(await activeCount(sql, projectId), 0);
      t.same(
        await finishConversation(sql, id, { ended_by: 'error', ended_at: new Date() }),
        { ended: false, recordingsStored: false },
        'a second finish changes nothing',
      );
      const [row] = await sql`select ended_by, duration_ms from conversations where id = ${id}`;
      t.same(row, { ended_by: 'assistant', duration_ms: 1200 });
    });
  });
}
