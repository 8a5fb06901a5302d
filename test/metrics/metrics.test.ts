import { describe, expect, it } from 'vitest';
import { parseLoopbackListen } from '../../src/metrics/export.js';
import { HostMetrics } from '../../src/metrics/metrics.js';

describe('metricsListen is loopback only', () => {
  it('takes 127.0.0.0/8, ::1 and localhost; refuses anything else, naming it', () => {
    expect(parseLoopbackListen('127.0.0.1:9464')).toEqual({ host: '127.0.0.1', port: 9464 });
    expect(parseLoopbackListen('[::1]:9464')).toEqual({ host: '::1', port: 9464 });
    expect(parseLoopbackListen('localhost:1')).toEqual({ host: 'localhost', port: 1 });
    expect(parseLoopbackListen('0.0.0.0:9464')).toEqual({ problem: expect.stringContaining("'0.0.0.0:9464' is not a loopback address") });
    expect(parseLoopbackListen('10.0.0.1:9464')).toHaveProperty('problem');
    expect(parseLoopbackListen('127.0.0.1')).toHaveProperty('problem');
  });
});

describe('the host metrics, rendered', () => {
  it('counts told, states read from their sources at each render', async () => {
    let waiting = 2;
    const metrics = await HostMetrics.create({ outboxWaiting: () => waiting, lastReport: () => ({ sequence: 7, at: '2026-12-01T12:00:00.000Z' }), refusals: () => ({ stale: 2, forged: 1 }), linkUp: () => false, now: () => Date.parse('2026-12-01T12:00:10.000Z') }, { node: 'web-1' });
    metrics.applied('delivery', 'converged', 0.2);
    metrics.applied('reconcile', 'failed', 1.5);
    metrics.driftFound('path', 3);
    let text = await metrics.render();
    expect(text).toContain('mesh_host_applies_total{trigger="delivery",outcome="converged",node="web-1"} 1');
    expect(text).toContain('mesh_host_applies_total{trigger="reconcile",outcome="failed",node="web-1"} 1');
    expect(text).toContain('mesh_host_refusals{kind="stale",node="web-1"} 2');
    expect(text).toContain('mesh_host_drift_found_total{kind="path",node="web-1"} 3');
    expect(text).toContain('mesh_host_outbox_reports{node="web-1"} 2');
    expect(text).toContain('mesh_host_last_report_sequence{node="web-1"} 7');
    expect(text).toContain('mesh_host_last_report_age_seconds{node="web-1"} 10');
    expect(text).toContain('mesh_host_link_up{node="web-1"} 0');
    waiting = 0;
    text = await metrics.render();
    expect(text).toContain('mesh_host_outbox_reports{node="web-1"} 0');
  });
});
