// The admin command (`npm run admin -- <command> ...`): workspaces, projects, API keys, the phone-number
// inventory, feature flags and allowlists, against the configured database. On the embedded database it
// refuses to run while a server holds it (the lock file in PARLEY_DATA_DIR).
import { ConfigError, loadSettings } from './config.js';
import { createLogger } from './log.js';
import { addressEntryProblem } from './auth/addresses.js';
import { E164_PATTERN } from './schemas/common.js';
import { projectName } from './schemas/projects.js';
import { insertApiKey } from './store/api-keys.js';
import { openStore, type Sql } from './store/db.js';
import { StoreError } from './store/errors.js';
import { setFeatureFlag } from './store/features.js';
import { migrate } from './store/migrate.js';
import { addToInventory, listInventory } from './store/phone-inventory.js';
import { insertProject } from './store/projects.js';
import {
  createWorkspace,
  listWorkspaces,
  updateWorkspaceSettings,
  workspaceIdByNameOrId,
  workspaceNameTaken,
} from './store/workspaces.js';

/** A wrong command line or an argument naming nothing; exits with status 2 and the usage. */
class AdminError extends Error {}

const USAGE = `usage: npm run admin -- <command> [arguments]

  list-workspaces                                  workspaces with their ids
  create-workspace <name>                          a workspace, its main project and an API key (printed once)
  create-project <workspace> <name>                a project in a workspace
  create-api-key <workspace> [name]                an API key (printed once)
  add-numbers [--workspace <workspace>] <+E164>... numbers for assign-automatically (any workspace when none given)
  list-numbers                                     the phone-number inventory
  set-feature <workspace> <flag> on|off|unset      a per-workspace feature flag (e.g. responses)
  set-ip-allowlist <workspace> [<ip or CIDR>...]   replace the workspace ip_allowlist (none: allow every address)

<workspace> is a workspace name or id.`;

const out = (line: string) => process.stdout.write(`${line}\n`);

async function workspaceId(sql: Sql, nameOrId: string | undefined): Promise<string> {
  if (!nameOrId) throw new AdminError('a workspace name or id is needed');
  const id = await workspaceIdByNameOrId(sql, nameOrId);
  if (!id) throw new AdminError(`no workspace '${nameOrId}'`);
  return id;
}

type Command = (sql: Sql, args: string[]) => Promise<void>;

const commands: Record<string, Command> = {
  async 'list-workspaces'(sql) {
    for (const r of await listWorkspaces(sql)) out(`${r.id}\t${r.name}\t${JSON.stringify(r.features)}`);
  },

  async 'create-workspace'(sql, [name]) {
    if (!name) throw new AdminError('create-workspace needs a name');
    if (await workspaceNameTaken(sql, name)) throw new AdminError(`a workspace named '${name}' exists`);
    const w = await createWorkspace(sql, name);
    out(`workspace ${w.orgId}\nproject main ${w.projectId}\napi key (shown once): ${w.apiKey}`);
  },

  async 'create-project'(sql, [ws, name]) {
    const orgId = await workspaceId(sql, ws);
    const parsed = projectName.safeParse(name);
    if (!parsed.success) throw new AdminError(`project name: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    const row = await insertProject(sql, orgId, { name: parsed.data });
    if (!row) throw new AdminError(`the workspace has a project named '${name}'`);
    out(`project ${name} ${row.id}`);
  },

  async 'create-api-key'(sql, [ws, name = 'admin']) {
    const orgId = await workspaceId(sql, ws);
    const key = await insertApiKey(sql, orgId, name);
    out(`api key ${key.id} (shown once): ${key.secret}`);
  },

  async 'add-numbers'(sql, args) {
    let orgId: string | null = null;
    const numbers: string[] = [];
    for (let i = 0; i < args.length; i++) {
      if (args[i] === '--workspace') orgId = await workspaceId(sql, args[++i]);
      else numbers.push(args[i]);
    }
    if (numbers.length === 0) throw new AdminError('add-numbers needs at least one number');
    const bad = numbers.find((n) => !E164_PATTERN.test(n));
    if (bad) throw new AdminError(`'${bad}' is not an E.164 number`);
    const added = await addToInventory(sql, orgId, numbers);
    out(
      `added ${added.length} of ${numbers.length} numbers${added.length < numbers.length ? ' (others were already in the inventory)' : ''}`,
    );
  },

  async 'list-numbers'(sql) {
    for (const r of await listInventory(sql)) out(`${r.number}\t${r.org_id ?? '(any workspace)'}`);
  },

  async 'set-feature'(sql, [ws, flag, value]) {
    const orgId = await workspaceId(sql, ws);
    if (!flag || !/^[a-z][a-z0-9_]*$/.test(flag)) throw new AdminError('set-feature needs a flag name (snake_case)');
    if (value !== 'unset' && value !== 'on' && value !== 'off')
      throw new AdminError('set-feature needs on, off or unset');
    await setFeatureFlag(sql, orgId, flag, value === 'unset' ? null : value === 'on');
    out(`${flag} ${value}`);
  },

  async 'set-ip-allowlist'(sql, [ws, ...entries]) {
    const orgId = await workspaceId(sql, ws);
    for (const e of entries) {
      const problem = addressEntryProblem(e);
      if (problem) throw new AdminError(`'${e}' ${problem}`);
    }
    await updateWorkspaceSettings(sql, orgId, { ip_allowlist: entries });
    out(entries.length ? `ip_allowlist: ${entries.join(', ')}` : 'ip_allowlist cleared: every address is allowed');
  },
};

async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  const command = name ? commands[name] : undefined;
  if (!command) {
    process.stderr.write(`${name && name !== 'help' ? `unknown command '${name}'\n\n` : ''}${USAGE}\n`);
    return name === 'help' ? 0 : 2;
  }
  const settings = loadSettings();
  const log = createLogger(process.env.PARLEY_LOG_LEVEL ?? 'warn');
  const store = await openStore(settings, log);
  try {
    await migrate(store.sql, log);
    await command(store.sql, args);
    return 0;
  } finally {
    await store.close();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: Error) => {
    if (err instanceof AdminError) {
      process.stderr.write(`admin: ${err.message}\n\n${USAGE}\n`);
      process.exit(2);
    }
    if (err instanceof ConfigError || err instanceof StoreError) {
      process.stderr.write(`admin: ${err.message}\n`);
      process.exit(1);
    }
    process.stderr.write(`admin: ${err.stack ?? err.message}\n`);
    process.exit(1);
  },
);
