// Voices over real HTTP: the shipped catalog, signed sample links valid 7 days served by the
// control plane, 404s, PARLEY_PUBLIC_URL as the link base and a catalog from PARLEY_VOICES_FILE.
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { api, DB_KINDS, startTestServer } from '../helpers/server.js';

// Real databases (and a PGlite template made on first use) under a parallel suite: more than tap's default.
t.setTimeout(300_000);

const SEVEN_DAYS_MS = 7 * 24 * 3600 * 1000;

for (const db of DB_KINDS) {
  t.test(`voices on ${db}`, { timeout: 120_000 }, async (t) => {
    const server = await startTestServer({ db });
    t.teardown(() => server.close());
    const client = api(server);

    t.test('the catalog ships grant and sabrina and more', async (t) => {
      const res = await client.get('/v1/voices');
      t.equal(res.status, 200);
      const ids = res.body.voices.map((v: { id: string }) => v.id);
      t.ok(ids.includes('grant') && ids.includes('sabrina'));
      t.ok(ids.length >= 4);
      for (const v of res.body.voices) t.match(v, { id: /^[a-z]+$/, name: String, audio_url: String });
    });

    t.test('get a voice; its audio_url is a signed link valid 7 days that serves a WAV without a key', async (t) => {
      const before = Date.now();
      const res = await client.get('/v1/voices/grant');
      t.equal(res.status, 200);
      t.match(res.body.voice, { id: 'grant', name: 'Grant', description: String });
      const url = new URL(res.body.voice.audio_url);
      t.equal(url.origin, server.url);
      t.equal(url.pathname, '/samples/voices/grant.wav');
      const expiresMs = Number(url.searchParams.get('expires')) * 1000;
      t.ok(expiresMs > before + SEVEN_DAYS_MS - 2000 && expiresMs <= Date.now() + SEVEN_DAYS_MS, 'expires in 7 days');
      const sample = await fetch(url);
      t.equal(sample.status, 200);
      t.equal(sample.headers.get('content-type'), 'audio/wav');
      const wav = Buffer.from(await sample.arrayBuffer());
      t.equal(wav.subarray(0, 4).toString(), 'RIFF');
      t.equal(wav.subarray(8, 12).toString(), 'WAVE');
      t.ok(wav.length > 8000, `a real recording (${wav.length} bytes)`);
      const again = await fetch(url);
      t.same(Buffer.from(await again.arrayBuffer()), wav, 'cached sample served again');
    });

    t.test('tampered, expired, or unsigned links answer 403', async (t) => {
      const { body } = await client.get('/v1/voices/sabrina');
      const url = new URL(body.voice.audio_url);
      const forged = new URL(url);
      forged.pathname = '/samples/voices/grant.wav';
      t.equal((await fetch(forged)).status, 403, 'a signature is for its own path');
      const badSig = new URL(url);
      badSig.searchParams.set('sig', '0'.repeat(64));
      t.equal((await fetch(badSig)).status, 403);
      const unsigned = new URL(url);
      unsigned.search = '';
      t.equal((await fetch(unsigned)).status, 403);
      const past = server.ctx.signer.sign(
        '/samples/voices/sabrina.wav',
        VOICE_TTL_PAST,
        new Date(Date.now() - SEVEN_DAYS_MS - 60_000),
      );
      const expired = await fetch(server.url + past);
      t.equal(expired.status, 403);
      t.match(await expired.json(), { error: { message: /expired/ } });
    });

    t.test('unknown voice: 404; no key: 401', async (t) => {
      const res = await client.get('/v1/voices/nobody');
      t.equal(res.status, 404);
      t.match(res.body, { error: { message: /nobody/ } });
      t.equal((await client.get('/v1/voices/grant', undefined, { key: null })).status, 401);
    });
  });
}
const VOICE_TTL_PAST = 7 * 24 * 3600;

t.test('PARLEY_PUBLIC_URL and PARLEY_VOICES_FILE', { timeout: 60_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-voices-'));
  const file = join(dir, 'voices.json');
  writeFileSync(file, JSON.stringify([{ id: 'robo', name: 'Robo', description: null, engines: { echo: 'en-us' } }]));
  const server = await startTestServer({
    db: 'postgres',
    env: { PARLEY_PUBLIC_URL: 'https://voice.example.com/', PARLEY_VOICES_FILE: file },
  });
  t.teardown(() => server.close());
  const res = await api(server).get('/v1/voices');
  t.equal(res.body.voices.length, 1);
  t.match(res.body.voices[0], {
    id: 'robo',
    name: 'Robo',
    description: null,
    audio_url: /^https:\/\/voice\.example\.com\/samples\/voices\/robo\.wav\?expires=\d+&sig=[0-9a-f]{64}$/,
  });
  t.equal((await api(server).get('/v1/voices/grant')).status, 404);
});
