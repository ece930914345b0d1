// The guarded HTTP client against real servers on loopback: names that resolve to internal addresses, IP literals
// and redirects to them refused before any connection; the checked address is the one connected to (one DNS
// answer per hop); redirects bounded and re-checked; response size and time capped; TLS verified against the
// URL's name (peers.ts: 127.0.0.2 plays the internet, 127.0.0.1 the internal service).
import { createServer as createTlsServer } from 'node:https';
import t, { type Test } from 'tap';
import { createGuardedFetch, GuardedFetchError, type GuardedFetchOptions } from '../../src/net/guarded-fetch.js';
import { answer, FAKE_PUBLIC, INTERNAL, listen, policy, resolver, selfSignedCert } from './peers.js';

t.setTimeout(60_000);

function client(opts: Partial<GuardedFetchOptions> = {}) {
  return createGuardedFetch({ allowPrivate: false, isAllowedAddress: policy, ...opts });
}

async function refusal(
  t: Test,
  promise: Promise<unknown>,
  kind: string,
  message?: RegExp | string,
): Promise<GuardedFetchError | null> {
  try {
    await promise;
    t.fail(`expected a ${kind} refusal, got a response`);
    return null;
  } catch (err) {
    t.type(err, GuardedFetchError, `${kind}: a GuardedFetchError`);
    t.equal((err as GuardedFetchError).kind, kind);
    if (message) t.match((err as Error).message, message);
    return err as GuardedFetchError;
  }
}

t.test(
  'a name that resolves to loopback is refused before any connection, with the address in the message',
  async (t) => {
    const internal = await listen(t, INTERNAL, answer(200, 'internal secret'));
    const resolve = resolver({ 'internal.example.com': [INTERNAL] });
    // The default policy: public unicast only.
    const fetch = createGuardedFetch({ allowPrivate: false, resolve });
    await refusal(
      t,
      fetch(`http://internal.example.com:${internal.port}/admin`),
      'address_not_allowed',
      `endpoint address is not allowed: ${INTERNAL}`,
    );
    t.equal(internal.seen.length, 0, 'the internal service got no request');
  },
);

t.test('every address a name resolves to must be allowed', async (t) => {
  const internal = await listen(t, INTERNAL, answer(200, 'internal secret'));
  const fetch = client({ resolve: resolver({ 'mixed.example.com': [FAKE_PUBLIC, INTERNAL] }) });
  await refusal(t, fetch(`http://mixed.example.com:${internal.port}/`), 'address_not_allowed', `: ${INTERNAL}`);
  t.equal(internal.seen.length, 0);
});

t.test('IP literals are judged as the URL parser writes them, without DNS', async (t) => {
  const internal = await listen(t, INTERNAL, answer(200, 'internal secret'));
  const resolve = resolver({});
  const fetch = client({ resolve });
  const p = internal.port;
  for (const url of [
    `http://127.0.0.1:${p}/`,
    `http://2130706433:${p}/`,
    `http://0x7f.1:${p}/`,
    `http://127.1:${p}/`,
    `http://[::1]:${p}/`,
    `http://[::ffff:127.0.0.1]:${p}/`,
  ]) {
    await refusal(t, fetch(url), 'address_not_allowed', /endpoint address is not allowed: /);
  }
  t.same(resolve.calls, {}, 'no DNS query for a literal');
  t.equal(internal.seen.length, 0);
});

t.test('PARLEY_ALLOW_PRIVATE_ENDPOINTS (allowPrivate) opens private addresses; the other limits stay', async (t) => {
  const internal = await listen(t, INTERNAL, answer(200, 'local dev server'));
  const fetch = createGuardedFetch({ allowPrivate: true, maxResponseBytes: 4 });
  await refusal(t, fetch(`http://127.0.0.1:${internal.port}/`), 'response_too_large');
  const open = createGuardedFetch({ allowPrivate: true });
  const res = await open(`http://127.0.0.1:${internal.port}/`);
  t.equal(res.status, 200);
  t.equal(await res.text(), 'local dev server');
  await refusal(t, open('ftp://127.0.0.1/'), 'invalid_url');
});

t.test('the connection goes to the address that was checked: one DNS answer per hop (no rebinding)', async (t) => {
  const internal = await listen(t, INTERNAL, answer(200, 'internal secret'));
  const pub = await listen(t, FAKE_PUBLIC, (_req, res, seen) => {
    res.writeHead(201, { 'content-type': 'application/json', 'x-seen-host': String(seen.headers.host) });
    res.end(JSON.stringify({ got: JSON.parse(seen.body) }));
  });
  t.equal(pub.port === internal.port, false);
  // First answer public, every later one internal: a second lookup would land on the internal service.
  const resolve = resolver({ 'hooks.example.com': [[FAKE_PUBLIC], [INTERNAL]] });
  const fetch = client({ resolve });
  const res = await fetch(`http://hooks.example.com:${pub.port}/hook?x=1`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-key': 'k' },
    body: JSON.stringify({ a: 1 }),
  });
  t.equal(res.status, 201);
  t.same(await res.json(), { got: { a: 1 } });
  t.equal(res.headers.get('x-seen-host'), `hooks.example.com:${pub.port}`, 'Host names the URL, not the address');
  t.equal(resolve.calls['hooks.example.com'], 1, 'resolved once');
  t.equal(pub.seen.length, 1);
  t.equal(pub.seen[0].url, '/hook?x=1');
  t.equal(pub.seen[0].headers['x-key'], 'k');
  t.equal(internal.seen.length, 0);
});

t.test('a redirect to an internal address is refused at its hop, by literal or by name', async (t) => {
  const internal = await listen(t, INTERNAL, answer(200, 'internal secret'));
  const pub = await listen(t, FAKE_PUBLIC, (req, res) => {
    const to =
      req.url === '/by-name'
        ? `http://internal.example.com:${internal.port}/secret`
        : `http://127.0.0.1:${internal.port}/secret`;
    res.writeHead(302, { location: to });
    res.end();
  });
  const fetch = client({
    resolve: resolver({ 'hooks.example.com': [FAKE_PUBLIC], 'internal.example.com': [INTERNAL] }),
  });
  await refusal(
    t,
    fetch(`http://hooks.example.com:${pub.port}/by-literal`),
    'address_not_allowed',
    `endpoint address is not allowed: ${INTERNAL}`,
  );
  await refusal(
    t,
    fetch(`http://hooks.example.com:${pub.port}/by-name`, { method: 'POST', body: '{}' }),
    'address_not_allowed',
    `: ${INTERNAL}`,
  );
  t.equal(pub.seen.length, 2, 'the public endpoint was called');
  t.equal(internal.seen.length, 0, 'the internal service never was');
});

t.test(
  'redirects within the limit are followed: 303 turns POST into GET, 307 keeps it; credentials stay with their origin',
  async (t) => {
    const other = await listen(t, FAKE_PUBLIC, (_req, res, seen) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          method: seen.method,
          body: seen.body,
          auth: seen.headers.authorization ?? null,
          key: seen.headers['x-key'] ?? null,
        }),
      );
    });
    const first = await listen(t, FAKE_PUBLIC, (req, res) => {
      if (req.url === '/303') res.writeHead(303, { location: `http://hooks.example.com:${other.port}/after-303` });
      else if (req.url === '/307') res.writeHead(307, { location: '/same-origin' });
      else if (req.url === '/same-origin')
        res.writeHead(307, { location: `http://hooks.example.com:${other.port}/after-307` });
      else res.writeHead(404);
      res.end();
    });
    const fetch = client({ resolve: resolver({ 'hooks.example.com': [FAKE_PUBLIC] }) });
    const init = {
      method: 'POST',
      headers: { authorization: 'Bearer s3cret', 'x-key': 'k', 'content-type': 'application/json' },
      body: '{"a":1}',
    };

    const after303 = await (await fetch(`http://hooks.example.com:${first.port}/303`, init)).json();
    t.same(
      after303,
      { method: 'GET', body: '', auth: null, key: 'k' },
      '303: a GET without body; authorization not sent to another origin',
    );

    const after307 = await (await fetch(`http://hooks.example.com:${first.port}/307`, init)).json();
    t.same(
      after307,
      { method: 'POST', body: '{"a":1}', auth: null, key: 'k' },
      '307 twice: still a POST with its body',
    );
    t.equal(first.seen[2].headers.authorization, 'Bearer s3cret', 'a same-origin redirect keeps authorization');
  },
);

t.test(
  'redirect limits: past maxRedirects fails; maxRedirects 0 and redirect "error" follow none; "manual" returns the 3xx',
  async (t) => {
    const loop = await listen(t, FAKE_PUBLIC, (req, res) => {
      const n = Number(req.url!.slice(1));
      res.writeHead(302, { location: `/${n + 1}` });
      res.end();
    });
    const resolve = resolver({ 'hooks.example.com': [FAKE_PUBLIC] });
    const url = `http://hooks.example.com:${loop.port}/0`;
    await refusal(t, client({ resolve, maxRedirects: 3 })(url), 'too_many_redirects', /more than 3 times/);
    t.same(
      loop.seen.map((s) => s.url),
      ['/0', '/1', '/2', '/3'],
      'the first request and three redirects',
    );
    t.equal(resolve.calls['hooks.example.com'], 4, 'each hop resolved and checked');

    await refusal(t, client({ resolve, maxRedirects: 0 })(url), 'redirect_refused');
    await refusal(t, client({ resolve })(url, { redirect: 'error' }), 'redirect_refused');
    const manual = await client({ resolve })(url, { redirect: 'manual' });
    t.equal(manual.status, 302);
    t.equal(manual.headers.get('location'), '/1');
  },
);

t.test('response size cap: declared too large, and streamed past the cap', async (t) => {
  const big = 'x'.repeat(64 * 1024);
  const pub = await listen(t, FAKE_PUBLIC, (req, res) => {
    if (req.url === '/declared') {
      res.writeHead(200, { 'content-length': String(big.length) });
      return void res.end(big);
    }
    // Chunked, no length: the client must count.
    res.writeHead(200);
    for (let i = 0; i < 16; i++) res.write(big);
    res.end();
  });
  const fetch = client({ resolve: resolver({ 'hooks.example.com': [FAKE_PUBLIC] }), maxResponseBytes: 32 * 1024 });
  await refusal(
    t,
    fetch(`http://hooks.example.com:${pub.port}/declared`),
    'response_too_large',
    /larger than 32768 bytes/,
  );
  await refusal(
    t,
    fetch(`http://hooks.example.com:${pub.port}/streamed`),
    'response_too_large',
    /larger than 32768 bytes/,
  );
  const fits = await client({ resolve: resolver({ 'hooks.example.com': [FAKE_PUBLIC] }), maxResponseBytes: 64 * 1024 })(
    `http://hooks.example.com:${pub.port}/declared`,
  );
  t.equal((await fits.text()).length, big.length, 'a body at the cap is read whole');
});

t.test(
  'time cap: an endpoint that never answers hits the deadline; the caller aborting rejects with its reason',
  async (t) => {
    const hung = await listen(t, FAKE_PUBLIC, () => {
      /* never answers */
    });
    const resolve = resolver({ 'hooks.example.com': [FAKE_PUBLIC] });
    await refusal(
      t,
      client({ resolve, timeoutMs: 100 })(`http://hooks.example.com:${hung.port}/`),
      'timeout',
      /no response within 100 ms/,
    );

    const abort = new AbortController();
    const pending = client({ resolve })(`http://hooks.example.com:${hung.port}/`, { signal: abort.signal });
    // Abort once the request has reached the server.
    while (hung.seen.length < 2) await new Promise((r) => setTimeout(r, 5));
    abort.abort(new Error('caller gave up'));
    await t.rejects(pending, { message: 'caller gave up' });
    const already = new AbortController();
    already.abort(new Error('before'));
    await t.rejects(client({ resolve })(`http://hooks.example.com:${hung.port}/`, { signal: already.signal }), {
      message: 'before',
    });
    t.equal(hung.seen.length, 2, 'an already aborted call sends nothing');
  },
);

t.test('URLs: http and https only, no credentials; an unresolvable name', async (t) => {
  const fetch = client({ resolve: resolver({}) });
  await refusal(t, fetch('file:///etc/passwd'), 'invalid_url', /http or https/);
  await refusal(t, fetch('gopher://hooks.example.com/'), 'invalid_url');
  await refusal(t, fetch('http://user:pw@hooks.example.com/'), 'invalid_url', /credentials/);
  await refusal(t, fetch('not a url'), 'invalid_url');
  await refusal(
    t,
    fetch('http://nowhere.example.com/'),
    'unresolvable',
    'endpoint host cannot be resolved: nowhere.example.com',
  );
});

t.test(
  'https: the certificate is checked against the URL name at the pinned address; https -> http is refused',
  async (t) => {
    const { key, cert } = selfSignedCert('hooks.example.com');
    const sni: string[] = [];
    const plain = await listen(t, FAKE_PUBLIC, answer(200, 'plain http'));
    const secure = await listen(
      t,
      FAKE_PUBLIC,
      (req, res) => {
        if (req.url === '/downgrade') {
          res.writeHead(302, { location: `http://hooks.example.com:${plain.port}/` });
          return void res.end();
        }
        res.writeHead(200);
        res.end('over tls');
      },
      (fn) => {
        const s = createTlsServer({ key, cert }, fn);
        s.on('secureConnection', (socket) => sni.push(String((socket as { servername?: string }).servername)));
        return s;
      },
    );
    const resolve = resolver({ 'hooks.example.com': [FAKE_PUBLIC], 'other.example.com': [FAKE_PUBLIC] });
    const fetch = client({ resolve, ca: cert });
    const ok = await fetch(`https://hooks.example.com:${secure.port}/`);
    t.equal(await ok.text(), 'over tls');
    t.same(sni, ['hooks.example.com'], 'SNI names the host of the URL');
    await refusal(
      t,
      fetch(`https://other.example.com:${secure.port}/`),
      'connection_failed',
      /ERR_TLS_CERT_ALTNAME_INVALID/,
    );
    await refusal(
      t,
      client({ resolve })(`https://hooks.example.com:${secure.port}/`),
      'connection_failed',
      /SELF_SIGNED|self-signed|UNABLE_TO_VERIFY/i,
    );
    await refusal(t, fetch(`https://hooks.example.com:${secure.port}/downgrade`), 'redirect_refused', /not https/);
    t.equal(plain.seen.length, 0, 'the http URL was not called');
  },
);
