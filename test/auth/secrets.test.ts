// Secrets: formats, entropy, and SHA-256 hashing (what api_keys and session_tokens store).
import { createHash } from 'node:crypto';
import t from 'tap';
import { bearerSecret } from '../../src/auth/authenticate.js';
import { hashSecret, newApiKeySecret, newSessionTokenSecret } from '../../src/auth/secrets.js';

t.test('formats and hashing', async (t) => {
  const key = newApiKeySecret();
  t.match(key, /^pk_[A-Za-z0-9_-]{43}$/);
  t.match(newSessionTokenSecret(), /^st_[A-Za-z0-9_-]{43}$/);
  t.not(newApiKeySecret(), key);
  t.equal(hashSecret(key), createHash('sha256').update(key).digest('hex'));
  const many = new Set(Array.from({ length: 1000 }, () => newApiKeySecret()));
  t.equal(many.size, 1000);
});

t.test('bearer header parsing', async (t) => {
  t.equal(bearerSecret('Bearer pk_abc'), 'pk_abc');
  t.equal(bearerSecret('bearer   pk_abc  '), 'pk_abc');
  t.equal(bearerSecret('Basic pk_abc'), null);
  t.equal(bearerSecret('Bearer'), null);
  t.equal(bearerSecret('Bearer a b'), null);
  t.equal(bearerSecret(undefined), null);
});
