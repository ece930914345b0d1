// A finish made again (src/store/conversations.ts finishConversation): its first attempt committed but its answer
// was lost with the connection, so the record's writer sends it once more. The second answer must say the recording
// is stored (the row points at its file), or the writer would remove a file the record keeps. Both databases.
import t from 'tap';
import { createConversation, finishConversation, type NewRecording } from '../../src/store/conversations.js';
import { DB_KINDS, startTestServer } from '../helpers/server.js';

t.setTimeout(180_000);

const recording = (path: string): NewRecording => ({
  side: 'both',
  path,
  format: 'wav',
  sample_rate: 16000,
  channels: 2,
  bytes: 1044,
  compress_to: 'wav.gz',
});

for (const db of DB_KINDS) {
  t.test(`a finish made again on ${db}`, async (t) => {
    const server = await startTestServer({ db });
    t.teardown(() => server.close());
    const { sql, orgId, projectId } = server;
    const id = await createConversation(sql, { orgId, projectId, origin: 'web' });
    const finish = { ended_by: 'user' as const, ended_at: new Date(), duration_ms: 1000 };
    t.same(await finishConversation(sql, id, finish, [recording(`${id}.wav`)]), {
      ended: true,
      recordingsStored: true,
    });
    t.same(
      await finishConversation(sql, id, finish, [recording(`${id}.wav`)]),
      { ended: false, recordingsStored: true },
      'the same file again: stored',
    );
    t.same(
      await finishConversation(sql, id, finish, [recording('another.wav')]),
      { ended: false, recordingsStored: false },
      'another file for a side that has one: refused',
    );

    const zdr = await createConversation(sql, {
      orgId,
      projectId,
      origin: 'web',
      settings: { data_retention_policy: { zero_data_retention: true } },
    });
    t.same(
      await finishConversation(sql, zdr, finish, [recording(`${zdr}.wav`)]),
      { ended: true, recordingsStored: false },
      'zero data retention: never stored',
    );
  });
}
