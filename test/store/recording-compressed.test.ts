// moveRecordingToCompressed (src/store/conversations.ts), the compare-and-set behind the worker protocol's
// `recording_compressed`: it moves a recording row to its gzip only while the row still points at the `.wav` the
// compressor read; a deleted or replaced recording is left as it is (no row comes back).
import t from 'tap';
import { startTestServer } from '../helpers/server.js';
import {
  addRecording,
  createConversation,
  deleteConversationContent,
  finishConversation,
  getRecording,
  moveRecordingToCompressed,
  pendingCompressions,
} from '../../src/store/conversations.js';

t.setTimeout(120_000);

t.test('moveRecordingToCompressed on postgres', async (t) => {
  const server = await startTestServer({ db: 'postgres' });
  t.teardown(() => server.close());
  const { sql, orgId, projectId } = server;
  const ended = { ended_by: 'user' as const, ended_at: new Date(), duration_ms: 1000 };
  const wav = (path: string) => ({
    side: 'both' as const,
    path,
    format: 'wav' as const,
    sample_rate: 8000,
    channels: 2,
    bytes: 64_044,
  });
  const gz = (path: string) => ({ path, format: 'wav.gz' as const, bytes: 20_000 });

  t.test('moves the row while it points at the .wav, once', async (t) => {
    const id = await createConversation(sql, { orgId, projectId, origin: 'web' });
    t.ok((await finishConversation(sql, id, ended, [{ ...wav(`${id}.wav`), compress_to: 'wav.gz' }])).ended);
    t.ok(
      (await pendingCompressions(sql)).some((p) => p.conversation_id === id && p.path === `${id}.wav`),
      'pending while wav',
    );
    t.equal(await moveRecordingToCompressed(sql, id, 'both', `${id}.wav`, gz(`${id}.wav.gz`)), true);
    t.notOk(
      (await pendingCompressions(sql)).some((p) => p.conversation_id === id),
      'no longer pending once moved',
    );
    t.match(await getRecording(sql, id, 'both'), {
      path: `${id}.wav.gz`,
      format: 'wav.gz',
      bytes: 20_000,
      sample_rate: 8000,
      channels: 2,
    });
    t.equal(
      await moveRecordingToCompressed(sql, id, 'both', `${id}.wav`, gz(`${id}.wav.gz`)),
      false,
      'a second move finds no .wav',
    );
  });

  t.test('a row replaced meanwhile is left as it is', async (t) => {
    const id = await createConversation(sql, { orgId, projectId, origin: 'web' });
    t.ok((await finishConversation(sql, id, ended, [wav(`${id}.wav`)])).ended);
    await addRecording(sql, id, wav('other.wav'));
    t.equal(await moveRecordingToCompressed(sql, id, 'both', `${id}.wav`, gz(`${id}.wav.gz`)), false);
    t.match(await getRecording(sql, id, 'both'), { path: 'other.wav', format: 'wav', bytes: 64_044 });
  });

  t.test('a deleted recording does not come back', async (t) => {
    const id = await createConversation(sql, { orgId, projectId, origin: 'web' });
    t.ok((await finishConversation(sql, id, ended, [wav(`${id}.wav`)])).ended);
    t.equal((await deleteConversationContent(sql, id)).kind, 'deleted');
    t.equal(await moveRecordingToCompressed(sql, id, 'both', `${id}.wav`, gz(`${id}.wav.gz`)), false);
    t.equal(await getRecording(sql, id, 'both'), null);
  });

  t.test('only the named side moves', async (t) => {
    const id = await createConversation(sql, { orgId, projectId, origin: 'web' });
    t.ok((await finishConversation(sql, id, ended, [wav(`${id}.wav`), { ...wav(`${id}.wav`), side: 'user' }])).ended);
    t.equal(await moveRecordingToCompressed(sql, id, 'user', `${id}.wav`, gz(`${id}.wav.gz`)), true);
    t.match(await getRecording(sql, id, 'both'), { path: `${id}.wav`, format: 'wav' }, 'the other side untouched');
    t.match(await getRecording(sql, id, 'user'), { path: `${id}.wav.gz`, format: 'wav.gz' });
  });
});
