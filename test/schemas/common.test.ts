// Shared rules: E.164, LANG, and "publicly routable HTTPS URL without embedded credentials".
import t from 'tap';
import { e164, httpsPublicUrl, lang, publicHttpsUrlProblem } from '../../src/schemas/common.js';

const strict = { PARLEY_ALLOW_PRIVATE_ENDPOINTS: false };
const dev = { PARLEY_ALLOW_PRIVATE_ENDPOINTS: true };

t.test('E.164 and LANG', async (t) => {
  for (const ok of ['+14155550123', '+447911123456', '+12']) t.ok(e164.safeParse(ok).success, ok);
  for (const bad of ['14155550123', '+04155550123', '+1415555012345678', '+1 415 555', '+'])
    t.notOk(e164.safeParse(bad).success, bad);
  for (const ok of ['en', 'fil', 'yue', 'zh']) t.ok(lang.safeParse(ok).success, ok);
  for (const bad of ['EN', 'en-US', 'xx', 'eng']) t.notOk(lang.safeParse(bad).success, bad);
});

t.test('public https URLs', async (t) => {
  for (const ok of [
    'https://api.example.com/hook',
    'https://8.8.8.8/x',
    'https://[2606:4700::1111]/',
    'https://hooks.example.com:8443/a?b=c',
  ]) {
    t.equal(publicHttpsUrlProblem(ok, strict), null, ok);
  }
  const bad: [string, RegExp][] = [
    ['http://api.example.com', /https/],
    ['https://user:pw@api.example.com', /credentials/],
    ['https://user@api.example.com', /credentials/],
    ['not a url', /valid URL/],
    ['https://127.0.0.1', /publicly routable/],
    ['https://10.20.30.40', /publicly routable/],
    ['https://172.16.5.4', /publicly routable/],
    ['https://192.168.1.1', /publicly routable/],
    ['https://169.254.169.254/latest/meta-data', /publicly routable/],
    ['https://100.64.0.1', /publicly routable/],
    ['https://0.0.0.0', /publicly routable/],
    ['https://[::1]', /publicly routable/],
    ['https://[fe80::1]', /publicly routable/],
    ['https://[fd00::1]', /publicly routable/],
    ['https://[::ffff:10.0.0.1]', /publicly routable/],
    ['https://localhost', /local host name/],
    ['https://printer.local', /local host name/],
    ['https://db.internal', /local host name/],
    ['https://intranet', /local host name/],
  ];
  for (const [url, re] of bad) t.match(publicHttpsUrlProblem(url, strict), re, url);
  t.equal(publicHttpsUrlProblem('https://127.0.0.1:8443/hook', dev), null, 'allowed for development');
  t.match(publicHttpsUrlProblem('http://127.0.0.1', dev), /https/, 'still https');
  t.match(publicHttpsUrlProblem('https://u:p@127.0.0.1', dev), /credentials/, 'still no credentials');
  const schema = httpsPublicUrl(strict);
  t.ok(schema.safeParse('https://api.example.com').success);
  const failed = schema.safeParse('https://localhost');
  t.notOk(failed.success);
  t.match(failed.error?.issues[0].message, /publicly routable/);
});
