import { afterEach, describe, expect, it } from 'vitest';
import { declaration, testHost, type TestHost } from '../support/host.js';

let host: TestHost | undefined;
afterEach(() => host?.cleanup());

describe('containers with no engine to reach', () => {
  it('refuse the whole apply, saying why, and touch nothing', async () => {
    host = testHost({ kinds: { containerSocket: '/nonexistent/engine.sock' } });
    const result = await host.apply(
      declaration([
        { type: 'file', id: 'conf', path: '/etc/app.conf', content: 'x' },
        { type: 'container', id: 'web', name: 'web', image: { ref: `app@sha256:${'a'.repeat(64)}` }, state: 'running' },
      ]),
    );
    expect(result.kind).toBe('refused');
    expect(JSON.stringify(result)).toContain('containers are declared or recorded, but the container engine cannot be reached');
    expect(host.env.store.state.records.conf).toBeUndefined();
  });
});
