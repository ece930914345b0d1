// Signed links: HMAC over path and expiry; tampering, expiry and another secret all fail verification.
import t from 'tap';
import { createSigner } from '../../src/auth/signed-url.js';

const now = new Date('2026-11-22T12:00:00Z');
const read = (link: string) => {
  const u = new URL(link, 'http://x');
  return {
    path: u.pathname,
    expires: u.searchParams.get('expires') ?? undefined,
    sig: u.searchParams.get('sig') ?? undefined,
  };
};

t.test('a link verifies for its path until it expires', async (t) => {
  const signer = createSigner('0123456789abcdef0123456789abcdef');
  const link = signer.sign('/samples/voices/grant.wav', 60, now);
  t.match(link, /^\/samples\/voices\/grant\.wav\?expires=\d+&sig=[0-9a-f]{64}$/);
  const { path, expires, sig } = read(link);
  t.equal(Number(expires), now.getTime() / 1000 + 60);
  t.ok(signer.verify(path, expires, sig, now));
  t.ok(signer.verify(path, expires, sig, new Date(now.getTime() + 59_000)));
  t.notOk(signer.verify(path, expires, sig, new Date(now.getTime() + 60_000)), 'expired at expires');
  t.notOk(signer.verify('/samples/voices/sabrina.wav', expires, sig, now), 'another path');
  t.notOk(signer.verify(path, String(Number(expires) + 1000), sig, now), 'a moved expiry');
  t.notOk(signer.verify(path, expires, undefined, now));
  t.notOk(signer.verify(path, expires, 'zz', now));
  t.notOk(createSigner('another-secret-of-16+').verify(path, expires, sig, now), 'another secret');
});

t.test(
  'the signing secret: the setting when given, else generated once and kept in the database',
  { timeout: 120_000 },
  async (t) => {
    const { startTestServer } = await import('../helpers/server.js');
    const { loadSigningSecret } = await import('../../src/auth/signed-url.js');
    const server = await startTestServer({ db: 'postgres' });
    t.teardown(() => server.close());
    const first = await loadSigningSecret(server.sql, undefined);
    t.match(first, /^[0-9a-f]{64}$/);
    t.equal(await loadSigningSecret(server.sql, undefined), first, 'stable across starts');
    t.equal(await loadSigningSecret(server.sql, 'configured-secret-123'), 'configured-secret-123');
    const [row] = await server.sql<{ value: string }[]>`select value from settings where key = 'signing_secret'`;
    t.equal(row.value, first);
  },
);
