// The node's SIP service (docs/telephony.md): one user agent on PARLEY_SIP_PORT (UDP and TCP on PARLEY_HOST) that
// answers INVITEs (inbound-call.ts), places calls (outbound-call.ts), answers OPTIONS, and links every call to a
// media worker (call-control.ts). Started by src/main.ts after the workers, stopped before them: new INVITEs get
// 503, live calls are ended by their workers (records saved), BYE goes to each peer, then SIP closes.
import { createUserAgent, type UserAgent } from '../../sip/index.js';
import { ConfigError, type Settings } from '../config.js';
import type { Logger } from '../log.js';
import type { Sql } from '../store/db.js';
import { leasePolicy } from '../store/leases.js';
import type { OutboundCalls } from '../domain/outbound-calls.js';
import { CALL_CONTROL_DEFAULTS, CallControl } from './call-control.js';
import { inboundCalls } from './inbound-call.js';
import { InviteRateLimit } from './invite-rate-limit.js';
import { Locator } from './locate.js';
import { advertisedAddress } from './media-policy.js';
import type { MediaWorkers } from './media-workers.js';
import { TelephonyOutboundCalls } from './outbound-call.js';
import { CallTransfers } from './transfer.js';
import { IncomingRefers } from './refer-in.js';
import { RtpPorts } from './rtp-ports.js';
import { loadTrunks, type Trunks } from './trunks.js';
import { nodeMetrics } from '../metrics/node.js';

export const SIP_SERVICE_DEFAULTS = {
  /** Time live calls have at shutdown to be ended and saved by their workers. */
  shutdown_grace_ms: 10_000,
} as const;

const MS_PER_SEC = 1000;

export interface SipServiceOptions {
  settings: Settings;
  sql: Sql;
  log: Logger;
  workers: MediaWorkers;
  /** The node's trunks; loadTrunks(settings) by default. */
  trunks?: Trunks;
  /** RFC 3263 resolution of the outbound trunk; the system's DNS by default. */
  locator?: Locator;
  /** Uniform in [0, 1): RTP port order, rollout draws, caller-ID choice. */
  random?: () => number;
  now?: () => Date;
  /** How long a worker has to answer call_assigned (CALL_CONTROL_DEFAULTS.media_ready_timeout_ms by default). */
  mediaReadyTimeoutMs?: number;
}

export interface SipService {
  /** The port SIP listens on (UDP and TCP): the one PARLEY_SIP_PORT asked for, or the one port 0 got. */
  readonly port: number;
  /** Placing calls, for the control plane (POST /v1/conversations/outbound_call). */
  readonly outboundCalls: OutboundCalls;
  /** Calls this node holds now (being set up, ringing or live). */
  readonly activeCalls: number;
  /** The user agent (tests look at its dialogs). */
  readonly ua: UserAgent;
  /**
   * Drain (docs/operations.md, "Drain"): from now on new INVITEs and OPTIONS get 503 and new outbound calls are
   * refused (unavailable); calls being set up, ringing or live go on until they end or stop() ends them.
   */
  drain(): void;
  /** Graceful stop: 503 to new INVITEs and OPTIONS, live calls ended and saved by their workers, BYEs, SIP closed. */
  stop(graceMs?: number): Promise<void>;
}

/** Starts the SIP service. A port that cannot be bound throws ConfigError naming PARLEY_SIP_PORT. */
export async function startSipService(opts: SipServiceOptions): Promise<SipService> {
  const { settings, sql, log } = opts;
  const random = opts.random ?? Math.random;
  const trunks = opts.trunks ?? loadTrunks(settings);
  const address = advertisedAddress(settings);
  const policy = leasePolicy(settings);
  const ports = RtpPorts.fromSettings(settings, random);
  let ua: UserAgent;
  try {
    ua = await createUserAgent({
      host: settings.PARLEY_HOST,
      port: settings.PARLEY_SIP_PORT,
      advertisedHost: address,
      userAgent: 'parley',
      observer: nodeMetrics.sipObserver,
    });
  } catch (err) {
    throw new ConfigError([
      {
        setting: 'PARLEY_SIP_PORT',
        message: `cannot listen for SIP on ${settings.PARLEY_HOST}:${settings.PARLEY_SIP_PORT} (UDP and TCP): ${(err as Error).message}`,
      },
    ]);
  }
  ua.on('error', (err) => log.warn({ err }, 'SIP background request failed'));
  const mediaReadyTimeoutMs = opts.mediaReadyTimeoutMs ?? CALL_CONTROL_DEFAULTS.media_ready_timeout_ms;
  const control = new CallControl({ workers: opts.workers, ports, sql, log, now: opts.now, mediaReadyTimeoutMs });
  opts.workers.listen({
    notice: (workerId, notice) => control.notice(workerId, notice),
    workerLost: (workerId) => control.workerLost(workerId),
  });
  const stopping = new AbortController();
  let draining = false;
  ua.on(
    'invite',
    inboundCalls({
      ua,
      control,
      trunks,
      sql,
      policy,
      address,
      log,
      random,
      rateLimit: InviteRateLimit.fromSettings(settings),
      isStopping: () => stopping.signal.aborted,
      isDraining: () => draining,
    }),
  );
  const locator = opts.locator ?? new Locator();
  const refers = new IncomingRefers({
    ua,
    control,
    trunks,
    locator,
    sql,
    address,
    ringTimeoutMs: settings.PARLEY_RING_TIMEOUT_SEC * MS_PER_SEC,
    now: opts.now,
  });
  control.referHandler = (call, dialog) => refers.attach(call, dialog);
  const outboundCalls = new TelephonyOutboundCalls({
    ua,
    control,
    sql,
    policy,
    address,
    random,
    trunk: trunks.outbound(),
    locator,
    ringTimeoutMs: settings.PARLEY_RING_TIMEOUT_SEC * MS_PER_SEC,
    stopping: stopping.signal,
    isDraining: () => draining,
    releaseWaitMs: mediaReadyTimeoutMs,
  });
  // Registers itself as the control's transfer listener.
  new CallTransfers({
    ua,
    control,
    ports,
    locator,
    address,
    log,
    outboundTrunk: trunks.outbound(),
    ringTimeoutMs: settings.PARLEY_RING_TIMEOUT_SEC * MS_PER_SEC,
    stopping: stopping.signal,
  });
  log.info(
    { port: ua.port, host: settings.PARLEY_HOST, address, trunks: trunks.all().map((t) => t.name) },
    'SIP listening',
  );

  let stopped: Promise<void> | null = null;
  return {
    get port() {
      return ua.port;
    },
    outboundCalls,
    get activeCalls() {
      return control.calls.size;
    },
    ua,
    drain() {
      draining = true;
      ua.acceptingCalls = false;
    },
    stop(graceMs = SIP_SERVICE_DEFAULTS.shutdown_grace_ms) {
      stopped ??= (async () => {
        stopping.abort();
        ua.acceptingCalls = false;
        await control.endAll(graceMs);
        await ua.close();
        log.info('SIP closed');
      })();
      return stopped;
    },
  };
}
