import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { declaration, testHost, type TestHost } from '../support/host.js';
import { scratch } from '../support/tree.js';

let host: TestHost | undefined;
let server: Server | undefined;
let dir: ReturnType<typeof scratch> | undefined;
afterEach(async () => {
  host?.cleanup();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  dir?.cleanup();
  host = server = dir = undefined;
});

const declared = declaration([
  { type: 'file', id: 'conf', path: '/etc/app.conf', content: 'x' },
  { type: 'container', id: 'web', name: 'web', image: { ref: `app@sha256:${'a'.repeat(64)}` }, state: 'running' },
]);

describe('containers with no engine to reach', () => {
  it('refuse the whole apply, saying why, and touch nothing', async () => {
    host = testHost({ kinds: { containerSocket: '/nonexistent/engine.sock' } });
    const result = await host.apply(declared);
    expect(result.kind).toBe('refused');
    expect(JSON.stringify(result)).toContain('containers are declared or recorded, but the container engine cannot be reached');
    expect(host.env.store.state.records.conf).toBeUndefined();
  });

  // A fast check of the wording beside the real case: podman whose storage a power cut left unreadable,
  // cut in the guest by the power-cut benchmark, answers every listing so.
  it('say the engine answered with an error, and what it said, when it fails the listing (its storage broken)', async () => {
    dir = scratch('mesh-host-broken-engine-');
    const socket = join(dir.dir, 'engine.sock');
    const said = 'getting graph driver info "7f23": readlink /var/lib/containers/storage/overlay: invalid argument';
    server = createServer((_req, res) => {
      res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ cause: 'invalid argument', message: said, response: 500 }));
    });
    await new Promise<void>((resolve) => server!.listen(socket, resolve));
    host = testHost({ kinds: { containerSocket: socket } });
    const result = await host.apply(declared);
    expect(result.kind).toBe('refused');
    const words = JSON.stringify(result);
    expect(words).toContain('containers are declared or recorded, but the container engine answered with an error');
    expect(words).toContain('readlink /var/lib/containers/storage/overlay: invalid argument');
    expect(words).not.toContain('cannot be reached');
    expect(host.env.store.state.records.conf).toBeUndefined();
  });
});
