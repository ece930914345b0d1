-- Credential changes, whoever makes them (another node, the admin command), are announced on the channel
-- `parley_auth` so every node forgets what it cached (src/auth/credential-cache.ts). Payloads:
-- `api_key:<id>`, `session_token:<id>`, `workspace:<id>`.

create function parley_auth_changed() returns trigger language plpgsql as $$
begin
  perform pg_notify('parley_auth', tg_argv[0] || ':' || old.id);
  return null;
end
$$;

-- A key stops working when deleted (its session tokens go with it, each announced below) or rotated.
create trigger api_keys_auth_changed after update of secret_hash, org_id or delete on api_keys
  for each row execute function parley_auth_changed('api_key');

-- Expired tokens are refused anyway (cached ones too): only a change or the deletion of a live token is news.
create trigger session_tokens_auth_changed after update of token_hash, expires_at, conversation_ids or delete on session_tokens
  for each row when (old.expires_at > now()) execute function parley_auth_changed('session_token');

-- The allowlist travels with every cached credential of the workspace.
create trigger organizations_auth_changed after update of ip_allowlist or delete on organizations
  for each row execute function parley_auth_changed('workspace');
