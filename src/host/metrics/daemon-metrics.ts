import type { Server } from 'node:http';
import type { Logger } from '../../core/system/log.js';
import type { Outcome, Trigger } from '../../engine/report/report.js';
import { HostMetrics, type MetricSources } from './metrics.js';
import { parseLoopbackListen, serveMetrics, writeMetricsFile } from './export.js';

/** The daemon's metrics: counted as applies end and watchers find, exported where the configuration says. */
export interface DaemonMetrics {
  applied(trigger: Trigger, outcome: Outcome, seconds: number): void;
  driftFound(kind: 'unit' | 'path' | 'container', count: number): void;
  /** Writes the textfile (when configured); called after every apply and refusal. */
  written(): Promise<void>;
  close(): Promise<void>;
}

/** Nothing is counted and nothing loaded when neither place is configured. */
const NONE: DaemonMetrics = { applied() {}, driftFound() {}, written: async () => {}, close: async () => {} };

/**
 * Starts the metrics when `metricsFile` or `metricsListen` is configured (prom-client is loaded only
 * then). A `metricsListen` that is not a loopback address is said and not served; the host runs on.
 */
export async function startDaemonMetrics(config: { node: string; metricsFile?: string; metricsListen?: string }, sources: MetricSources, log: Logger): Promise<DaemonMetrics> {
  if (!config.metricsFile && !config.metricsListen) return NONE;
  const metrics = await HostMetrics.create(sources, { node: config.node });
  let server: Server | undefined;
  if (config.metricsListen) {
    const listen = parseLoopbackListen(config.metricsListen);
    if ('problem' in listen) log.error(`metrics: ${listen.problem}; not served`);
    else {
      try {
        server = await serveMetrics(listen, metrics);
        log.info({ listen: config.metricsListen }, 'metrics: served on GET /metrics');
      } catch (err) {
        log.error({ err: (err as Error).message, listen: config.metricsListen }, 'metrics: cannot listen; not served');
      }
    }
  }
  const file = config.metricsFile;
  const write = async () => {
    if (!file) return;
    try {
      await writeMetricsFile(file, metrics);
    } catch (err) {
      log.warn({ err: (err as Error).message, file }, 'metrics: the textfile could not be written');
    }
  };
  await write();
  return {
    applied: (trigger, outcome, seconds) => metrics.applied(trigger, outcome, seconds),
    driftFound: (kind, count) => metrics.driftFound(kind, count),
    written: write,
    close: () => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())),
  };
}
