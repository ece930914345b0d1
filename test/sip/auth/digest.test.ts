import t from 'tap';
import {
  computeResponse,
  formatCredentials,
  hashOf,
  parseAuthParams,
  parseChallenge,
  parseCredentials,
  DigestFormatError,
} from '../../../sip/auth/digest.js';
import { DigestClient } from '../../../sip/auth/client.js';
import { DigestServer } from '../../../sip/auth/server.js';

// RFC 7616 3.9.1 (the example RFC 8760 points SIP implementations to).
const RFC = {
  username: 'Mufasa',
  password: 'Circle of Life',
  realm: 'http-auth@example.org',
  uri: '/dir/index.html',
  nonce: '7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v',
  cnonce: 'f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ',
  opaque: 'FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS',
  md5: '8ca523f5e9506fed4657c9700eebdbec',
  sha256: '753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1',
};

t.test('RFC 7616 3.9.1 vectors through the client, MD5 and SHA-256', async (t) => {
  for (const [algorithm, expected] of [
    ['MD5', RFC.md5],
    ['SHA-256', RFC.sha256],
  ] as const) {
    const client = new DigestClient({ username: RFC.username, password: RFC.password }, { cnonce: () => RFC.cnonce });
    const challenge = `Digest realm="${RFC.realm}", qop="auth, auth-int", algorithm=${algorithm}, nonce="${RFC.nonce}", opaque="${RFC.opaque}"`;
    const answer = client.respond(401, [challenge], 'GET', RFC.uri);
    if (!answer) throw new Error('no answer');
    t.equal(answer.name, 'Authorization');
    const creds = parseCredentials(answer.value);
    t.equal(creds?.response, expected, `${algorithm} response`);
    t.equal(creds?.nc, '00000001');
    t.equal(creds?.qop, 'auth');
    t.equal(creds?.opaque, RFC.opaque);
    t.match(answer.value, new RegExp(`algorithm=${algorithm},`), 'algorithm is not quoted');
  }
});

t.test('computeResponse: RFC 2069 form (no qop) and -sess', async (t) => {
  const ha1 = hashOf('MD5', 'u:r:p');
  const ha2 = hashOf('MD5', 'INVITE:sip:a@b');
  t.equal(
    computeResponse({
      algorithm: 'MD5',
      ha1Base: ha1,
      nonce: 'N',
      method: 'INVITE',
      uri: 'sip:a@b',
      qop: null,
      nc: null,
      cnonce: null,
    }),
    hashOf('MD5', `${ha1}:N:${ha2}`),
  );
  const sess = hashOf('SHA-256', `${hashOf('SHA-256', 'u:r:p')}:N:C`);
  const ha2s = hashOf('SHA-256', 'INVITE:sip:a@b');
  t.equal(
    computeResponse({
      algorithm: 'SHA-256-sess',
      ha1Base: hashOf('SHA-256', 'u:r:p'),
      nonce: 'N',
      method: 'INVITE',
      uri: 'sip:a@b',
      qop: 'auth',
      nc: '00000001',
      cnonce: 'C',
    }),
    hashOf('SHA-256', `${sess}:N:00000001:C:auth:${ha2s}`),
  );
});

t.test('auth-param parsing: quoted strings with escapes and commas, errors are thrown', async (t) => {
  const p = parseAuthParams('Digest realm="a\\"b, c", nonce=xyz ,qop="auth,auth-int", stale=TRUE');
  t.equal(p.scheme, 'Digest');
  t.same(p.params, { realm: 'a"b, c', nonce: 'xyz', qop: 'auth,auth-int', stale: 'TRUE' });
  t.equal(parseChallenge('Digest realm="r", nonce="n", stale=TRUE')?.stale, true);
  t.equal(parseChallenge('Basic realm="r"'), null, 'not digest');
  t.equal(parseChallenge('Digest realm="r", nonce="n", algorithm=SHA-512-256'), null, 'unsupported algorithm');
  t.equal(parseChallenge('Digest realm="r", nonce="n"')?.algorithm, 'MD5', 'absent algorithm means MD5');
  t.throws(() => parseAuthParams('Digest realm="open'), DigestFormatError);
  t.throws(() => parseCredentials('Digest username="u", realm="r"'), DigestFormatError);
  const round = parseCredentials(
    formatCredentials({
      username: 'a"b',
      realm: 'r',
      nonce: 'n',
      uri: 'sip:x',
      response: 'ab',
      algorithm: 'MD5',
      cnonce: null,
      opaque: null,
      qop: null,
      nc: null,
    }),
  );
  t.equal(round?.username, 'a"b');
});

t.test('client: prefers SHA-256, 407 gives Proxy-Authorization, realm filter, nonce reuse with nc', async (t) => {
  const client = new DigestClient({ username: 'u', password: 'p' });
  const a = client.respond(
    407,
    [
      'Digest realm="r", nonce="n1", algorithm=MD5, qop="auth"',
      'Digest realm="r", nonce="n1", algorithm=SHA-256, qop="auth"',
    ],
    'INVITE',
    'sip:x@y',
  );
  t.equal(a?.name, 'Proxy-Authorization');
  t.equal(parseCredentials(a!.value)?.algorithm, 'SHA-256');
  const next = client.authorize('INVITE', 'sip:z@y');
  t.equal(next.length, 1);
  t.equal(parseCredentials(next[0].value)?.nc, '00000002', 'nonce reused with the next count');
  t.equal(parseCredentials(next[0].value)?.nonce, 'n1');
  t.equal(
    client.respond(407, ['Digest realm="r", nonce="n1", algorithm=SHA-256, qop="auth"'], 'INVITE', 'sip:x@y'),
    null,
    'same nonce challenged again: give up',
  );
  const stale = client.respond(
    407,
    ['Digest realm="r", nonce="n1", algorithm=SHA-256, qop="auth", stale=true'],
    'INVITE',
    'sip:x@y',
  );
  t.equal(stale?.stale, true, 'stale=true is answered again');
  const filtered = new DigestClient({ username: 'u', password: 'p', realm: 'trunk' });
  t.equal(
    filtered.respond(401, ['Digest realm="other", nonce="n"'], 'INVITE', 'sip:x'),
    null,
    'foreign realm is not answered',
  );
});

t.test('server: challenge, verify, wrong password, replay, stale expiry, foreign nonce', async (t) => {
  let now = 1_000_000;
  const server = new DigestServer({
    realm: 'parley',
    lookup: (u) => (u === 'alice' ? { password: 'secret' } : null),
    now: () => now,
    nonceTtlMs: 60_000,
  });
  const uri = 'sip:agent@127.0.0.1';
  const missing = server.verify('INVITE', uri, []);
  t.same(missing.ok ? null : missing.reason, 'missing');
  const challenges = missing.ok ? [] : missing.challenges;
  t.equal(challenges.length, 2, 'SHA-256 and MD5 challenges');
  t.match(challenges[0], /algorithm=SHA-256/);

  for (const algorithm of ['SHA-256', 'MD5']) {
    const client = new DigestClient({ username: 'alice', password: 'secret' });
    const answer = client.respond(
      401,
      server.challenges().filter((c) => c.includes(`algorithm=${algorithm},`)),
      'INVITE',
      uri,
    );
    t.same(server.verify('INVITE', uri, [answer!.value]), { ok: true, username: 'alice' }, `${algorithm} verifies`);
    const replay = server.verify('INVITE', uri, [answer!.value]);
    t.equal(replay.ok ? 'ok' : replay.reason, 'replay', 'same nc again is a replay');
    const second = client.authorize('BYE', uri)[0];
    t.same(
      server.verify('BYE', uri, [second.value]),
      { ok: true, username: 'alice' },
      'nonce reuse with nc+1 verifies',
    );
  }

  const wrong = new DigestClient({ username: 'alice', password: 'nope' }).respond(
    401,
    server.challenges(),
    'INVITE',
    uri,
  );
  const bad = server.verify('INVITE', uri, [wrong!.value]);
  t.equal(bad.ok ? 'ok' : bad.reason, 'bad_response');
  const unknown = new DigestClient({ username: 'mallory', password: 'x' }).respond(
    401,
    server.challenges(),
    'INVITE',
    uri,
  );
  const u = server.verify('INVITE', uri, [unknown!.value]);
  t.equal(u.ok ? 'ok' : u.reason, 'unknown_user');
  const otherUri = new DigestClient({ username: 'alice', password: 'secret' }).respond(
    401,
    server.challenges(),
    'INVITE',
    'sip:else@host',
  );
  const o = server.verify('INVITE', uri, [otherUri!.value]);
  t.equal(o.ok ? 'ok' : o.reason, 'bad_response', 'digest-uri must be the Request-URI');

  const client = new DigestClient({ username: 'alice', password: 'secret' });
  const early = client.respond(401, server.challenges(), 'INVITE', uri);
  now += 61_000;
  const stale = server.verify('INVITE', uri, [early!.value]);
  t.equal(stale.ok ? 'ok' : stale.reason, 'stale');
  t.match(stale.ok ? '' : stale.challenges[0], /stale=true/);
  const retried = client.respond(401, stale.ok ? [] : stale.challenges, 'INVITE', uri);
  t.equal(retried?.stale, true);
  t.same(server.verify('INVITE', uri, [retried!.value]), { ok: true, username: 'alice' }, 'retry after stale succeeds');

  const foreign = new DigestServer({ realm: 'parley', lookup: () => ({ password: 'secret' }) });
  const f = new DigestClient({ username: 'alice', password: 'secret' }).respond(
    401,
    foreign.challenges(),
    'INVITE',
    uri,
  );
  const fr = server.verify('INVITE', uri, [f!.value]);
  t.equal(fr.ok ? 'ok' : fr.reason, 'foreign_nonce', 'a nonce this server did not make is refused');
});

t.test('server accepts stored HA1 instead of a password', async (t) => {
  const ha1 = hashOf('MD5', 'bob:parley:pw');
  const server = new DigestServer({ realm: 'parley', algorithms: ['MD5'], lookup: () => ({ ha1: { MD5: ha1 } }) });
  const a = new DigestClient({ username: 'bob', password: 'pw' }).respond(
    401,
    server.challenges(),
    'REGISTER',
    'sip:parley',
  );
  t.same(server.verify('REGISTER', 'sip:parley', [a!.value]), { ok: true, username: 'bob' });
});
