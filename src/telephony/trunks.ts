// SIP trunks: who may send Parley calls and where Parley sends its own (docs/telephony.md, "Trunks").
// PARLEY_TRUNKS_FILE lists them; PARLEY_OUTBOUND_TRUNK is shorthand for one outbound-only trunk; with no file,
// one implicit trunk trusts loopback only, so a local SIPp or baresip can call a node out of the box.
import { readFileSync } from 'node:fs';
import type { BlockList } from 'node:net';
import { addressList, listHas } from '../auth/addresses.js';
import { ConfigError, type Settings } from '../config.js';
import { outboundUri, trunksFile, type TrunkConfig } from '../schemas/trunks.js';

/** A configured trunk (the file's shape, defaults filled in). */
export type Trunk = TrunkConfig;

/** RFC 1122 3.2.1.3 and RFC 4291 2.5.3: the loopback addresses. */
export const LOOPBACK_SOURCES: readonly string[] = ['127.0.0.0/8', '::1'];
export const IMPLICIT_TRUNK_NAME = 'loopback';
/** Name of the trunk PARLEY_OUTBOUND_TRUNK makes. */
export const OUTBOUND_SETTING_TRUNK_NAME = 'outbound';

/** The implicit trunk of a node without PARLEY_TRUNKS_FILE: calls from this machine, no digest. */
const IMPLICIT_TRUNK: Trunk = {
  name: IMPLICIT_TRUNK_NAME,
  inbound: {
    sources: [...LOOPBACK_SOURCES],
    auth: null,
    follow_redirects: true,
    allow_refer: true,
    trust_asserted_identity: true,
  },
  outbound: null,
};

export class Trunks {
  readonly #all: readonly Trunk[];
  readonly #inbound: ReadonlyArray<{ trunk: Trunk; sources: BlockList }>;
  readonly #outbound: Trunk | null;

  constructor(trunks: readonly Trunk[]) {
    this.#all = trunks;
    this.#inbound = trunks.flatMap((trunk) =>
      trunk.inbound ? [{ trunk, sources: addressList(trunk.inbound.sources) }] : [],
    );
    this.#outbound = trunks.find((t) => t.outbound !== null) ?? null;
  }

  /** The first trunk (in file order) whose inbound sources hold `source`; IPv4-mapped IPv6 matches IPv4 entries. */
  matchInbound(source: string): Trunk | null {
    for (const { trunk, sources } of this.#inbound) if (listHas(sources, source)) return trunk;
    return null;
  }

  /** The trunk that carries outbound calls, if any. */
  outbound(): Trunk | null {
    return this.#outbound;
  }

  all(): readonly Trunk[] {
    return this.#all;
  }
}

/** `trunks.0.inbound.sources.1` -> `trunks[0] (carrier).inbound.sources[1]`. */
function describePath(path: readonly PropertyKey[], raw: unknown): string {
  let out = '';
  path.forEach((key, i) => {
    out += typeof key === 'number' ? `[${key}]` : `${i === 0 ? '' : '.'}${String(key)}`;
    if (i === 1 && path[0] === 'trunks' && typeof key === 'number') {
      const name = (raw as { trunks?: Array<{ name?: unknown }> }).trunks?.[key]?.name;
      if (typeof name === 'string') out += ` (${name})`;
    }
  });
  return out || '(file)';
}

function readTrunksFile(file: string, read: (path: string) => string): Trunk[] {
  const setting = 'PARLEY_TRUNKS_FILE';
  let raw: unknown;
  try {
    raw = JSON.parse(read(file));
  } catch (err) {
    throw new ConfigError([{ setting, message: `cannot read ${file}: ${(err as Error).message}` }]);
  }
  const parsed = trunksFile.safeParse(raw);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((issue) => ({
        setting,
        message: `${file}: ${describePath(issue.path, raw)}: ${issue.message}`,
      })),
    );
  }
  return parsed.data.trunks;
}

function outboundSettingTrunk(uriText: string): Trunk {
  const uri = outboundUri.safeParse(uriText);
  if (!uri.success) throw new ConfigError([{ setting: 'PARLEY_OUTBOUND_TRUNK', message: uri.error.issues[0].message }]);
  return {
    name: OUTBOUND_SETTING_TRUNK_NAME,
    inbound: null,
    outbound: { uri: uri.data, transport: null, auth: null, caller_id: null },
  };
}

/**
 * The node's trunks: PARLEY_TRUNKS_FILE's, else the implicit loopback trunk; plus PARLEY_OUTBOUND_TRUNK as an
 * outbound-only trunk. Throws ConfigError naming the setting (and the file's field) that is wrong.
 */
export function loadTrunks(
  settings: Pick<Settings, 'PARLEY_TRUNKS_FILE' | 'PARLEY_OUTBOUND_TRUNK'>,
  read: (path: string) => string = (path) => readFileSync(path, 'utf8'),
): Trunks {
  const list = settings.PARLEY_TRUNKS_FILE ? readTrunksFile(settings.PARLEY_TRUNKS_FILE, read) : [IMPLICIT_TRUNK];
  if (settings.PARLEY_OUTBOUND_TRUNK) {
    const carrying = list.find((t) => t.outbound !== null);
    if (carrying) {
      throw new ConfigError([
        {
          setting: 'PARLEY_OUTBOUND_TRUNK',
          message: `trunk '${carrying.name}' in PARLEY_TRUNKS_FILE already carries outbound calls; set one of the two`,
        },
      ]);
    }
    if (list.some((t) => t.name === OUTBOUND_SETTING_TRUNK_NAME)) {
      throw new ConfigError([
        {
          setting: 'PARLEY_OUTBOUND_TRUNK',
          message: `PARLEY_TRUNKS_FILE already has a trunk named '${OUTBOUND_SETTING_TRUNK_NAME}'; give its outbound section there`,
        },
      ]);
    }
    list.push(outboundSettingTrunk(settings.PARLEY_OUTBOUND_TRUNK));
  }
  return new Trunks(list);
}
