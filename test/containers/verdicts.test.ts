import { describe, expect, it } from 'vitest';
import type { Inspected } from '../../src/kinds/container/engine.js';
import { firstLookVerdict, lookVerdict } from '../../src/kinds/container/look.js';
import { digestsOf, fieldsLabel, fieldsThatDiffer, specOf } from '../../src/kinds/container/engine-request.js';
import type { ContainerResource } from '../../src/core/declaration/schema.js';
import { containerFinding } from '../../src/kinds/container/container-watch.js';

const seen = (extra: Partial<Inspected> = {}): Inspected => ({
  id: 'abc', name: 'web', state: 'running', labels: {}, running: true, exitCode: 0, startedAt: '2026-01-01T00:00:00Z', restartCount: 0, ...extra,
});
const web = (extra: Partial<ContainerResource> = {}): ContainerResource => ({ type: 'container', id: 'web', name: 'web', image: { ref: `app@sha256:${'a'.repeat(64)}` }, state: 'running', ...extra });

describe('the two looks at a container, decided on what they saw', () => {
  it('running at both looks, or still starting its health check, is accepted', () => {
    expect(lookVerdict(seen(), seen())).toBeUndefined();
    expect(lookVerdict(seen({ health: 'starting' }), seen({ health: 'starting' }))).toBeUndefined();
  });
  it('dead, restarted, unhealthy or gone at the second look fails, saying its state and exit code', () => {
    expect(lookVerdict(seen(), seen({ running: false, state: 'exited', exitCode: 3 }))).toBe('was running at the first look and is not at the second (exited, exit code 3, restarts 0)');
    expect(lookVerdict(seen(), seen({ startedAt: '2026-01-01T00:00:01Z' }))).toMatch(/^was restarted by the engine between the looks/);
    expect(lookVerdict(seen(), seen({ restartCount: 1 }))).toMatch(/^was restarted by the engine between the looks \(running, exit code 0, restarts 1\)/);
    expect(lookVerdict(seen(), seen({ health: 'unhealthy' }))).toBe('is running but its health check fails at the second look (running, health unhealthy, exit code 0, restarts 0)');
    expect(lookVerdict(seen(), undefined)).toBe('is gone at the second look');
  });
  it('the first look fails a container already dead, not one the engine is restarting', () => {
    expect(firstLookVerdict(seen({ running: false, state: 'exited', exitCode: 1 }))).toMatch(/^is not running right after it was started/);
    expect(firstLookVerdict(seen({ running: false, state: 'restarting' }))).toBeUndefined();
    expect(firstLookVerdict(seen({ health: 'unhealthy' }))).toMatch(/^is running but its health check fails right after it was started \(running, health unhealthy/);
    expect(firstLookVerdict(seen({ health: 'starting' }))).toBeUndefined();
  });
});

describe('the spec and its digests', () => {
  it('is the same for the same fields however they are written, and names the fields that differ', () => {
    const a = digestsOf(specOf(web({ ports: ['8080:80', '127.0.0.1:9090:90/udp'], volumes: ['/srv:/data'], env: { B: '2', A: '1' } })));
    const b = digestsOf(specOf(web({ ports: ['127.0.0.1:9090:90/udp', '0.0.0.0:8080:80/tcp'], volumes: ['/srv:/data:rw'], env: { A: '1', B: '2' } })));
    expect(b.spec).toBe(a.spec);
    const c = digestsOf(specOf(web({ env: { A: '1', B: '3' }, restart: 'always' })));
    expect(fieldsThatDiffer(fieldsLabel(a.fields), c.fields)).toEqual(['env', 'ports', 'volumes', 'restart']);
    expect(fieldsThatDiffer(undefined, c.fields)).toHaveLength(7);
  });
  it('a sensitive value is in no label', () => {
    const labels = JSON.stringify(digestsOf(specOf(web({ env: { TOKEN: 'hunter2' }, sensitiveEnv: ['TOKEN'] }))));
    expect(labels).not.toContain('hunter2');
  });
});

describe("the watcher's words for an engine event", () => {
  it('names the container and what became of it', () => {
    expect(containerFinding({ action: 'die', id: 'abc', labels: { name: 'web', exitCode: '137' } }).message).toBe('container web died (exit code 137)');
    expect(containerFinding({ action: 'die', id: 'abc', labels: { name: 'web', containerExitCode: '1' } }).message).toBe('container web died (exit code 1)');
    expect(containerFinding({ action: 'oom', id: 'abc', labels: { name: 'web' } }).message).toBe('container web ran out of memory');
    expect(containerFinding({ action: 'remove', id: 'abcdef0123456789', labels: {} }).message).toBe('container abcdef012345 was removed');
  });
});
