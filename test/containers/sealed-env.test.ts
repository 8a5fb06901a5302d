import { describe, expect, it } from 'vitest';
import { CurveSender, newCurveSeed, sealingOf } from '../../src/core/declaration/sealed.js';
import { openEnv } from '../../src/kinds/container/sealed-env.js';
import { createRequest, labelsOf, specOf } from '../../src/kinds/container/engine-request.js';
import type { ContainerResource } from '../../src/core/declaration/schema.js';

const sender = new CurveSender('SOATESTSEEDFORSEALEDENV');
const container = (env: ContainerResource['env']): ContainerResource => ({
  type: 'container',
  id: 'api',
  name: 'api',
  image: { ref: `docker.io/library/busybox@sha256:${'b'.repeat(64)}` },
  state: 'running',
  env,
  sensitiveEnv: ['TOKEN'],
});

describe("a container's sealed env", () => {
  it('is opened for the engine and digested under the host\'s key for the labels: no label holds the value or its plain hash', () => {
    const host = sealingOf(newCurveSeed());
    const r = container({ TOKEN: sender.seal(Buffer.from('tok-1'), host.publicKey())!, MODE: 'prod' });
    const opened = openEnv(r, host);
    if (typeof opened === 'string') throw new Error(opened);
    const spec = specOf(opened.digested);
    const request = createRequest('web-1', r, spec, 'busybox', specOf(opened.plain).env);
    expect(request.env).toEqual(['MODE=prod', 'TOKEN=tok-1']);
    expect(JSON.stringify(request.labels)).not.toContain('tok-1');
    // The same value sealed twice (two boxes) makes the same labels: nothing is replaced for a new box alone.
    const again = openEnv(container({ TOKEN: sender.seal(Buffer.from('tok-1'), host.publicKey())!, MODE: 'prod' }), host);
    if (typeof again === 'string') throw new Error(again);
    expect(labelsOf('web-1', r, specOf(again.digested))).toEqual(request.labels);
    // Another value, other labels; and a plain TOKEN would label differently from its keyed digest.
    const other = openEnv(container({ TOKEN: sender.seal(Buffer.from('tok-2'), host.publicKey())!, MODE: 'prod' }), host);
    if (typeof other === 'string') throw new Error(other);
    expect(labelsOf('web-1', r, specOf(other.digested))).not.toEqual(request.labels);
    expect(labelsOf('web-1', r, specOf(container({ TOKEN: 'tok-1', MODE: 'prod' })))).not.toEqual(request.labels);
  });

  it('a value sealed for another host, or with no curve key, is the resource\'s problem, naming the variable', () => {
    const host = sealingOf(newCurveSeed());
    const elsewhere = sealingOf(newCurveSeed());
    const r = container({ TOKEN: sender.seal(Buffer.from('x'), elsewhere.publicKey())! });
    expect(openEnv(r, host)).toMatch(/^env TOKEN: the value is sealed for another host/);
    expect(openEnv(r, undefined)).toMatch(/^env TOKEN is sealed, but this host has no curve key/);
  });
});
