import type { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { lazy } from '../../core/system/interop.js';
import type { Outcome, Trigger } from '../../engine/report/report.js';

/** What the metrics read when they are rendered, rather than being told: the outbox and the last report. */
export interface MetricSources {
  /** Reports made and not yet acknowledged. */
  outboxWaiting(): number;
  /** The last report made: its sequence and when it was made (null before any). */
  lastReport(): { sequence: number; at: string } | null;
  /** Refusals by kind, as the store counts them (kept across restarts). */
  refusals(): Record<string, number>;
  linkUp(): boolean;
  now(): number;
}

/**
 * The host's metrics in the Prometheus text format (prom-client, loaded only when metrics are asked
 * for). Counts of what happened are told (`applied`, `driftFound`); what is a state of the host is read
 * from its sources at each render, so the two places it is collected from (the textfile and the HTTP
 * endpoint) always agree with the store and the outbox.
 */
export class HostMetrics {
  private constructor(
    private readonly registry: Registry,
    private readonly applies: Counter<'trigger' | 'outcome'>,
    private readonly duration: Histogram<'trigger'>,
    private readonly drift: Counter<'kind'>,
  ) {}

  static async create(sources: MetricSources, labels: { node: string }): Promise<HostMetrics> {
    const client = await lazy(import('prom-client'));
    const registry = new client.Registry();
    registry.setDefaultLabels(labels);
    const registers = [registry];
    const applies = new client.Counter({ name: 'mesh_host_applies_total', help: 'Applies since the daemon started, by what asked for them and how they ended.', labelNames: ['trigger', 'outcome'] as const, registers });
    const duration = new client.Histogram({ name: 'mesh_host_apply_duration_seconds', help: 'How long applies took, from the plan to the report.', labelNames: ['trigger'] as const, buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60], registers });
    const drift = new client.Counter({ name: 'mesh_host_drift_found_total', help: 'Changes the watchers found between applies: a unit that left running (unit), an owned path changed by someone else (path), a container of the host that died or was removed (container).', labelNames: ['kind'] as const, registers });
    const gauge = (name: string, help: string, read: (g: Gauge) => void, labelNames: string[] = []) =>
      new client.Gauge({ name, help, labelNames, registers, collect() { read(this); } });
    gauge('mesh_host_refusals', 'Declarations refused before anything was touched, by kind, as the store counts them (kept across restarts).', (g) => {
      g.reset();
      for (const [kind, n] of Object.entries(sources.refusals())) g.set({ kind }, n);
    }, ['kind']);
    gauge('mesh_host_outbox_reports', 'Reports made and not yet acknowledged by the mesh.', (g) => g.set(sources.outboxWaiting()));
    gauge('mesh_host_last_report_sequence', 'The sequence of the last report made (0 before any).', (g) => g.set(sources.lastReport()?.sequence ?? 0));
    gauge('mesh_host_last_report_timestamp_seconds', 'When the last report was made (Unix time).', (g) => {
      const last = sources.lastReport();
      if (last) g.set(Date.parse(last.at) / 1000);
    });
    gauge('mesh_host_last_report_age_seconds', 'Seconds since the last report was made, when the metrics were rendered.', (g) => {
      const last = sources.lastReport();
      if (last) g.set(Math.max(0, (sources.now() - Date.parse(last.at)) / 1000));
    });
    gauge('mesh_host_link_up', '1 when the link to the mesh is up, 0 when it is down.', (g) => g.set(sources.linkUp() ? 1 : 0));
    return new HostMetrics(registry, applies, duration, drift);
  }

  applied(trigger: Trigger, outcome: Outcome, seconds: number): void {
    this.applies.inc({ trigger, outcome });
    this.duration.observe({ trigger }, seconds);
  }

  driftFound(kind: 'unit' | 'path' | 'container', count = 1): void {
    this.drift.inc({ kind }, count);
  }

  render(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
