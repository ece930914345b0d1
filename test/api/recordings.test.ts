// The recording behind a conversation's `audio_url`: a signed link valid one day that serves `wav.gz` (default) or
// `wav` from either stored form; 403 when the signature is bad, missing or expired. Real speech (Debian's
// asterisk-core-sounds-en-wav) stands in for a recording. Both databases.
import t from 'tap';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { soundFile } from '../helpers/debian-packages.js';
import { api, DB_KINDS, startTestServer } from '../helpers/server.js';
import { addRecording, createConversation } from '../../src/store/conversations.js';
import { openRecording } from '../../src/api/recordings.js';
import { RECORDINGS_DIR } from '../../src/media/recording.js';
import type { RecordingRow } from '../../src/store/conversations.js';

const SPEECH_WAV = soundFile('hello-world');
const DAY_MS = 24 * 60 * 60 * 1000;

if (!existsSync(SPEECH_WAV))
  throw new Error(`${SPEECH_WAV} is missing: install asterisk-core-sounds-en-wav (.ci/run does)`);
const speech = readFileSync(SPEECH_WAV);

// Two databases, each a fresh server: more than tap's default file timeout on a loaded machine.
t.setTimeout(300_000);

for (const db of DB_KINDS) {
  t.test(`recording links on ${db}`, { timeout: 180_000 }, async (t) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'parley-rec-'));
    const server = await startTestServer({ db, env: { PARLEY_DATA_DIR: dataDir } });
    t.teardown(async () => {
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    });
    const client = api(server);
    const recDir = join(dataDir, RECORDINGS_DIR);
    const now = server.ctx.now;

    /** A finished conversation whose `both` recording is the speech file, stored as `format`. */
    async function withRecording(format: 'wav' | 'wav.gz'): Promise<string> {
      const id = await createConversation(server.sql, {
        orgId: server.orgId,
        projectId: server.projectId,
        origin: 'web',
        started_at: new Date(),
        finish: { ended_by: 'user', ended_at: new Date(), duration_ms: 1400 },
      });
      mkdirSync(join(recDir, id), { recursive: true });
      const rel = `${id}/both.${format}`;
      const bytes = format === 'wav' ? speech : gzipSync(speech);
      writeFileSync(join(recDir, rel), bytes);
      await addRecording(server.sql, id, {
        side: 'both',
        path: rel,
        format,
        sample_rate: 8000,
        channels: 1,
        bytes: bytes.length,
      });
      return id;
    }

    async function fetchBytes(url: string): Promise<{ status: number; type: string | null; bytes: Buffer }> {
      const res = await fetch(url);
      return { status: res.status, type: res.headers.get('content-type'), bytes: Buffer.from(await res.arrayBuffer()) };
    }

    t.test('both containers from a stored wav.gz and from a stored wav', async (t) => {
      for (const stored of ['wav.gz', 'wav'] as const) {
        const id = await withRecording(stored);
        const gz = (await client.get(`/v1/conversations/${id}`)).body.conversation.audio_url as string;
        t.ok(gz.startsWith(server.url), 'the link is absolute, on the public URL');
        t.match(
          gz,
          new RegExp(`/v1/recordings/${id}/both\\.wav\\.gz\\?expires=\\d+&sig=[0-9a-f]{64}$`),
          'wav.gz by default',
        );
        const expires = Number(new URL(gz).searchParams.get('expires'));
        t.ok(Math.abs(expires * 1000 - (Date.now() + DAY_MS)) < 60_000, 'valid for one day');
        const a = await fetchBytes(gz);
        t.equal(a.status, 200, `stored ${stored}, served wav.gz`);
        t.equal(a.type, 'application/gzip');
        t.ok(gunzipSync(a.bytes).equals(speech), 'the gzip holds the recording byte for byte');

        const wav = (await client.get(`/v1/conversations/${id}?audio_container=wav`)).body.conversation
          .audio_url as string;
        t.match(wav, /\/both\.wav\?expires=/);
        const b = await fetchBytes(wav);
        t.equal(b.status, 200, `stored ${stored}, served wav`);
        t.equal(b.type, 'audio/wav');
        t.ok(b.bytes.equals(speech), 'the wav is the recording byte for byte');
        t.equal(b.bytes.subarray(0, 4).toString('ascii'), 'RIFF');

        const listed = await client.get(`/v1/conversations?limit=1&audio_container=wav`);
        t.match(listed.body.conversations[0].audio_url, /\/both\.wav\?expires=/, 'listings sign links too');
      }
    });

    t.test('403 on a tampered, missing or expired signature; no Authorization needed', async (t) => {
      const id = await withRecording('wav.gz');
      const link = new URL((await client.get(`/v1/conversations/${id}`)).body.conversation.audio_url);
      t.equal((await fetchBytes(link.toString())).status, 200, 'the genuine link works without a key');

      const sig = link.searchParams.get('sig')!;
      const tampered = new URL(link);
      tampered.searchParams.set('sig', (sig[0] === 'a' ? 'b' : 'a') + sig.slice(1));
      t.equal((await fetchBytes(tampered.toString())).status, 403, 'tampered signature');

      const longer = new URL(link);
      longer.searchParams.set('expires', String(Number(link.searchParams.get('expires')) + 3600));
      t.equal((await fetchBytes(longer.toString())).status, 403, 'extended expiry');

      const otherFile = new URL(link.toString().replace('/both.wav.gz', '/both.wav'));
      t.equal((await fetchBytes(otherFile.toString())).status, 403, 'a signature is for one path only');

      const bare = new URL(link);
      bare.search = '';
      const noSig = await client.get(bare.pathname, undefined, { key: null });
      t.equal(noSig.status, 403, 'no signature');
      t.match(noSig.body, { error: { message: String, code: 'invalid_signature' } });

      server.ctx.now = () => new Date(now().getTime() + DAY_MS + 60_000);
      try {
        t.equal((await fetchBytes(link.toString())).status, 403, 'expired after a day');
      } finally {
        server.ctx.now = now;
      }
      t.equal((await fetchBytes(link.toString())).status, 200, 'and valid again on the real clock');
    });

    t.test('a valid link to a deleted recording is 404; bad file names are 400', async (t) => {
      const id = await withRecording('wav');
      const link = (await client.get(`/v1/conversations/${id}`)).body.conversation.audio_url as string;
      t.equal((await client.delete(`/v1/conversations/${id}`)).status, 200);
      t.equal(existsSync(join(recDir, id, 'both.wav')), false, 'delete removed the file');
      t.equal((await fetchBytes(link)).status, 404);
      t.equal((await client.get(`/v1/conversations/${id}`)).body.conversation.audio_url, null);
      const bad = await client.get(`/v1/recordings/${id}/both.mp3`, undefined, { key: null });
      t.equal(bad.status, 400);
    });

    t.test('a stored path outside the recordings directory is refused', async (t) => {
      const id = await createConversation(server.sql, {
        orgId: server.orgId,
        projectId: server.projectId,
        origin: 'web',
        finish: { ended_by: 'user', ended_at: new Date() },
      });
      copyFileSync(SPEECH_WAV, join(dataDir, 'outside.wav'));
      await addRecording(server.sql, id, {
        side: 'both',
        path: '../outside.wav',
        format: 'wav',
        sample_rate: 8000,
        channels: 1,
        bytes: speech.length,
      });
      const link = (await client.get(`/v1/conversations/${id}?audio_container=wav`)).body.conversation
        .audio_url as string;
      t.equal((await fetchBytes(link)).status, 500, 'a corrupt path is an internal error, never served');
    });
  });
}

// The compressor moves a row from its .wav to the .wav.gz and then unlinks the .wav: a download that read the row
// just before the move finds the .wav gone and must look the row up again, not answer 404.
t.test('openRecording: a file gone between the row read and the open is looked up once more', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-open-rec-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'c.wav.gz'), gzipSync(speech));
  const row = (path: string, format: 'wav' | 'wav.gz'): RecordingRow => ({
    conversation_id: 'c',
    side: 'both',
    path,
    format,
    sample_rate: 8000,
    channels: 2,
    bytes: 1,
  });
  const fileOf = (r: RecordingRow) => join(dir, r.path);

  const moved = [row('c.wav', 'wav'), row('c.wav.gz', 'wav.gz')];
  let lookups = 0;
  const opened = await openRecording(async () => moved[lookups++], fileOf);
  t.equal(lookups, 2, 'the row was read again after ENOENT');
  t.equal(opened?.row.format, 'wav.gz', 'the moved row is served');
  t.same(gunzipSync(await opened!.file.readFile()), speech, 'its file is the one opened');
  await opened!.file.close();

  let gone = 0;
  t.equal(
    await openRecording(async () => (gone++, row('missing.wav', 'wav')), fileOf),
    null,
    'a file missing on both reads: no recording',
  );
  t.equal(gone, 2, 'looked up twice, then given up');
  t.equal(await openRecording(async () => null, fileOf), null, 'no row: no recording');

  writeFileSync(join(dir, 'plain'), 'x');
  await t.rejects(
    openRecording(async () => row('plain/c.wav', 'wav'), fileOf),
    { code: 'ENOTDIR' },
    'other open errors are not hidden as a missing file',
  );

  const held = await openRecording(async () => row('c.wav.gz', 'wav.gz'), fileOf);
  rmSync(join(dir, 'c.wav.gz'));
  t.same(gunzipSync(await held!.file.readFile()), speech, 'a file unlinked after it was opened is still read whole');
  await held!.file.close();
});
