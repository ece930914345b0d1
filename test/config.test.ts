import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { ConfigError, loadSettings, metricsExposed } from '../src/config.js';

t.test('defaults apply when nothing is set', async (t) => {
  const s = loadSettings({});
  t.equal(s.PARLEY_HTTP_PORT, 3000);
  t.equal(s.PARLEY_WS_PORT, 3001);
  t.equal(s.PARLEY_SIP_PORT, 5060);
  t.equal(s.PARLEY_DATA_DIR, './data');
  t.equal(s.DATABASE_URL, undefined);
  t.equal(s.PARLEY_ALLOW_PRIVATE_ENDPOINTS, false);
});

t.test('environment values are parsed and typed', async (t) => {
  const s = loadSettings({
    PARLEY_HTTP_PORT: '8080',
    PARLEY_ALLOW_PRIVATE_ENDPOINTS: '1',
    DATABASE_URL: 'postgres://x@h/db',
  });
  t.equal(s.PARLEY_HTTP_PORT, 8080);
  t.equal(s.PARLEY_ALLOW_PRIVATE_ENDPOINTS, true);
  t.equal(s.DATABASE_URL, 'postgres://x@h/db');
});

t.test('a bad setting is rejected with its name', async (t) => {
  const err = t.throws(() => loadSettings({ PARLEY_HTTP_PORT: 'eighty' })) as ConfigError;
  t.ok(err instanceof ConfigError);
  t.equal(err.problems[0]?.setting, 'PARLEY_HTTP_PORT');
  t.match(err.message, /PARLEY_HTTP_PORT/);
  const bad = t.throws(() => loadSettings({ DATABASE_URL: 'mysql://x' })) as ConfigError;
  t.equal(bad.problems[0]?.setting, 'DATABASE_URL');
  const flag = t.throws(() => loadSettings({ PARLEY_ALLOW_PRIVATE_ENDPOINTS: 'maybe' })) as ConfigError;
  t.equal(flag.problems[0]?.setting, 'PARLEY_ALLOW_PRIVATE_ENDPOINTS');
});

t.test('a config file is read and the environment overrides it', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-config-'));
  const file = join(dir, 'parley.json');
  writeFileSync(file, JSON.stringify({ PARLEY_HTTP_PORT: 4000, PARLEY_WS_PORT: 4001 }));
  const s = loadSettings({ PARLEY_CONFIG_FILE: file, PARLEY_WS_PORT: '5001' });
  t.equal(s.PARLEY_HTTP_PORT, 4000);
  t.equal(s.PARLEY_WS_PORT, 5001);
  writeFileSync(file, JSON.stringify({ PARLEY_NOPE: 1 }));
  const err = t.throws(() => loadSettings({ PARLEY_CONFIG_FILE: file })) as ConfigError;
  t.equal(err.problems[0]?.setting, 'PARLEY_NOPE');
});

t.test('drain and metrics settings: defaults, and a metrics host needs its port', async (t) => {
  const s = loadSettings({});
  t.equal(s.PARLEY_DRAIN_TIMEOUT_SEC, 30);
  t.equal(metricsExposed(s), false, 'metrics are off unless configured');
  t.equal(loadSettings({ PARLEY_DRAIN_TIMEOUT_SEC: '0' }).PARLEY_DRAIN_TIMEOUT_SEC, 0, '0 ends at once');
  t.equal(metricsExposed(loadSettings({ PARLEY_METRICS_TOKEN: 'a-token-of-twenty-chars' })), true);
  t.equal(metricsExposed(loadSettings({ PARLEY_METRICS_PORT: '9464' })), true);
  const short = t.throws(() => loadSettings({ PARLEY_METRICS_TOKEN: 'short' })) as ConfigError;
  t.match(short.message, /PARLEY_METRICS_TOKEN/);
  const hostOnly = t.throws(() => loadSettings({ PARLEY_METRICS_HOST: '0.0.0.0' })) as ConfigError;
  t.match(hostOnly.message, /PARLEY_METRICS_HOST: needs PARLEY_METRICS_PORT/);
  const negative = t.throws(() => loadSettings({ PARLEY_DRAIN_TIMEOUT_SEC: '-1' })) as ConfigError;
  t.match(negative.message, /PARLEY_DRAIN_TIMEOUT_SEC/);
});
