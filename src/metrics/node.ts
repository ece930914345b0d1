// The node's one Prometheus registry (docs/operations.md, "Metrics"), on main. Main's own events (SIP messages,
// admissions, conversation ends, jobs, HTTP requests) increment prom-client counters here; the media workers'
// hot-path measurements arrive as snapshots (media.ts) and are served as they were last posted; values that live
// elsewhere (calls in SIP, the job queue, the database) are read at scrape time from the sources main.ts provides.
// This folder imports nothing of the rest of the node, so any layer may count into it.
import { Counter, Histogram, Registry, type Metric } from 'prom-client';
import {
  FRAME_SECONDS,
  JITTER_SECONDS,
  LATENCY_SECONDS,
  PAUSE_SECONDS,
  REQUEST_SECONDS,
  type HistogramSnapshot,
} from './histogram.js';
import type { WorkerMetricsSnapshot } from './media.js';
import { GC_KINDS, RuntimeMetrics, type RuntimeSnapshot } from './runtime.js';

type Labels = Record<string, string>;
interface Value {
  metricName?: string;
  labels: Labels;
  value: number;
}

/** What main.ts wires in: read at scrape time, each bounded by the caller. */
export interface NodeSources {
  /** Calls the SIP service holds (being set up, ringing or live). */
  sipCalls(): number;
  /** Jobs waiting or running, by kind and state. */
  jobQueue(): Promise<{ kind: string; state: string; count: number }[]>;
  /** Seconds a trivial statement took through the pool (waiting for a connection included); null: it failed. */
  databasePing(): Promise<number | null>;
  /** The node's readiness (src/readiness.ts). */
  readiness(): { ready: boolean; draining: boolean };
}

/** A metric computed from stored snapshots at scrape time (prom-client's Metric shape, read by Registry). */
class Derived {
  readonly aggregator = 'sum';
  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: 'gauge' | 'counter' | 'histogram',
    private readonly values: () => Value[] | Promise<Value[]>,
  ) {}

  async get() {
    return {
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values: await this.values(),
    };
  }

  reset(): void {}
}

/** The `_bucket` (cumulative, `le`), `_sum` and `_count` series of a fixed-bucket histogram. */
function histogramValues(
  name: string,
  labels: Labels,
  bounds: readonly number[],
  h: HistogramSnapshot,
  out: Value[],
): void {
  let cumulative = 0;
  for (let i = 0; i < bounds.length; i++) {
    cumulative += h.counts[i] ?? 0;
    out.push({ metricName: `${name}_bucket`, labels: { ...labels, le: String(bounds[i]) }, value: cumulative });
  }
  cumulative += h.counts[bounds.length] ?? 0;
  out.push({ metricName: `${name}_bucket`, labels: { ...labels, le: '+Inf' }, value: cumulative });
  out.push({ metricName: `${name}_sum`, labels, value: h.sum });
  out.push({ metricName: `${name}_count`, labels, value: h.count });
}

export class NodeMetrics {
  readonly registry = new Registry();
  /** main's own event loop and GC. */
  readonly runtime = new RuntimeMetrics();
  private readonly workers = new Map<number, WorkerMetricsSnapshot>();
  private sources: NodeSources | null = null;

  readonly conversationsEnded = new Counter({
    name: 'parley_conversations_ended_total',
    help: 'Conversations ended on this node, by ended_by.',
    labelNames: ['ended_by'] as const,
    registers: [this.registry],
  });
  readonly admissionsRefused = new Counter({
    name: 'parley_admissions_refused_total',
    help: 'Conversations and calls refused at admission because their project was at its concurrency cap.',
    registers: [this.registry],
  });
  readonly sipRequests = new Counter({
    name: 'parley_sip_requests_total',
    help: 'SIP requests received (in) and sent (out), by method.',
    labelNames: ['direction', 'method'] as const,
    registers: [this.registry],
  });
  readonly sipResponses = new Counter({
    name: 'parley_sip_responses_total',
    help: 'SIP responses received (in) and sent (out, retransmissions included), by method and status code.',
    labelNames: ['direction', 'method', 'code'] as const,
    registers: [this.registry],
  });
  readonly jobsFailed = new Counter({
    name: 'parley_jobs_failed_total',
    help: 'Failed job attempts, by kind; final="true" when the job was parked as failed (no attempt left).',
    labelNames: ['kind', 'final'] as const,
    registers: [this.registry],
  });
  readonly httpRequests = new Histogram({
    name: 'parley_http_request_duration_seconds',
    help: 'Control-plane requests, by method, route (its pattern) and status.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [...REQUEST_SECONDS],
    registers: [this.registry],
  });

  constructor() {
    const perWorker = (
      name: string,
      help: string,
      type: Derived['type'],
      values: (labels: Labels, s: WorkerMetricsSnapshot, out: Value[]) => void,
    ) =>
      this.register(
        new Derived(name, help, type, () => {
          const out: Value[] = [];
          for (const [id, s] of this.workers) values({ worker: String(id) }, s, out);
          return out;
        }),
      );
    perWorker(
      'parley_live_conversations',
      'Live conversations, by media worker and origin.',
      'gauge',
      (labels, s, out) => {
        for (const [origin, n] of Object.entries(s.conversations))
          out.push({ labels: { ...labels, origin }, value: n });
      },
    );
    perWorker(
      'parley_live_calls',
      'Phone calls a media worker holds (set up or live), by origin.',
      'gauge',
      (labels, s, out) => {
        for (const [origin, n] of Object.entries(s.calls)) out.push({ labels: { ...labels, origin }, value: n });
      },
    );
    perWorker(
      'parley_frame_duration_seconds',
      'Time a media worker spent on one 20 ms frame of its pacing clock.',
      'histogram',
      (labels, s, out) => histogramValues('parley_frame_duration_seconds', labels, FRAME_SECONDS, s.frame, out),
    );
    perWorker(
      'parley_first_audio_latency_seconds',
      "Per answered turn: end of the user's speech to the first assistant audio frame sent.",
      'histogram',
      (labels, s, out) =>
        histogramValues('parley_first_audio_latency_seconds', labels, LATENCY_SECONDS, s.firstAudio, out),
    );
    perWorker(
      'parley_rtp_jitter_seconds',
      'Inbound RTP interarrival jitter (RFC 3550 A.8) of each ended call.',
      'histogram',
      (labels, s, out) => histogramValues('parley_rtp_jitter_seconds', labels, JITTER_SECONDS, s.rtpJitter, out),
    );
    perWorker('parley_rtp_packets_received_total', 'Inbound RTP packets of calls.', 'counter', (labels, s, out) =>
      out.push({ labels, value: s.rtp.received }),
    );
    perWorker(
      'parley_rtp_packets_late_total',
      'Inbound RTP packets that arrived too late to be played.',
      'counter',
      (labels, s, out) => out.push({ labels, value: s.rtp.late }),
    );
    perWorker(
      'parley_rtp_packets_lost_total',
      'Inbound RTP packets lost (RFC 3550 A.3), counted when the call ends.',
      'counter',
      (labels, s, out) => out.push({ labels, value: s.rtp.lost }),
    );

    const perThread = (values: (labels: Labels, r: RuntimeSnapshot, out: Value[]) => void) => () => {
      const out: Value[] = [];
      values({ thread: 'main' }, this.runtime.snapshot(), out);
      for (const [id, s] of this.workers) values({ thread: `worker-${id}` }, s.runtime, out);
      return out;
    };
    this.register(
      new Derived(
        'parley_event_loop_delay_seconds',
        'How late a 20 ms timer fires, by thread (main, worker-N).',
        'histogram',
        perThread((labels, r, out) =>
          histogramValues('parley_event_loop_delay_seconds', labels, PAUSE_SECONDS, r.eventLoopDelay, out),
        ),
      ),
    );
    this.register(
      new Derived(
        'parley_gc_pause_seconds',
        'Garbage collection pauses, by thread and kind.',
        'histogram',
        perThread((labels, r, out) => {
          for (const kind of GC_KINDS)
            histogramValues('parley_gc_pause_seconds', { ...labels, kind }, PAUSE_SECONDS, r.gc[kind], out);
        }),
      ),
    );

    this.register(
      new Derived('parley_sip_calls', 'Calls the SIP service holds (being set up, ringing or live).', 'gauge', () =>
        this.sources ? [{ labels: {}, value: this.sources.sipCalls() }] : [],
      ),
    );
    this.register(
      new Derived(
        'parley_jobs',
        'Jobs of the shared queue waiting (pending) or running, by kind.',
        'gauge',
        async () =>
          this.sources
            ? (await this.sources.jobQueue()).map((r) => ({ labels: { kind: r.kind, state: r.state }, value: r.count }))
            : [],
      ),
    );
    this.register(
      new Derived(
        'parley_database_ping_seconds',
        'Time `select 1` took through the pool, waiting for a connection included; absent when it failed.',
        'gauge',
        async () => {
          const s = await this.sources?.databasePing();
          return s === null || s === undefined ? [] : [{ labels: {}, value: s }];
        },
      ),
    );
    this.register(
      new Derived('parley_ready', '1 while the node serves (readiness), 0 otherwise.', 'gauge', () =>
        this.sources ? [{ labels: {}, value: this.sources.readiness().ready ? 1 : 0 }] : [],
      ),
    );
    this.register(
      new Derived(
        'parley_draining',
        '1 while the node drains (SIGTERM received, live conversations finishing).',
        'gauge',
        () => (this.sources ? [{ labels: {}, value: this.sources.readiness().draining ? 1 : 0 }] : []),
      ),
    );
  }

  private register(metric: Derived): void {
    this.registry.registerMetric(metric as unknown as Metric);
  }

  provide(sources: NodeSources): void {
    this.sources = sources;
  }

  /** A media worker's latest snapshot (src/workers/worker-pool.ts). */
  workerSnapshot(workerId: number, snapshot: WorkerMetricsSnapshot): void {
    this.workers.set(workerId, snapshot);
  }

  /** The exposition text and its content type. */
  async scrape(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  /** Counts SIP traffic (sip/ createUserAgent's observer). */
  readonly sipObserver = {
    received: (msg: SipMessageLike) => this.countSip('in', msg),
    sent: (msg: SipMessageLike) => this.countSip('out', msg),
  };

  private countSip(direction: 'in' | 'out', msg: SipMessageLike): void {
    if (msg.kind === 'request') {
      this.sipRequests.inc({ direction, method: msg.method });
      return;
    }
    const cseq = msg.headers.get('CSeq');
    const method = cseq?.trim().split(/\s+/)[1] ?? 'unknown';
    this.sipResponses.inc({ direction, method, code: String(msg.status) });
  }
}

/** The fields of a SIP message counted (sip/'s SipRequest and SipResponse have them). */
type SipMessageLike =
  | { kind: 'request'; method: string }
  | { kind: 'response'; status: number; headers: { get(name: string): string | undefined } };

/** This node's metrics (main thread). */
export const nodeMetrics = new NodeMetrics();
