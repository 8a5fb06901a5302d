import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { projectDir } from '../support/cli.js';

/** bin/bundle.js is CommonJS, as the programs' entry points are (see its header). */
const { bundlePath, compileBundle } = createRequire(import.meta.url)(`${projectDir}bin/bundle.js`) as {
  bundlePath(program: string): string;
  compileBundle(file: string, cachedData?: Buffer): { cachedDataRejected?: boolean };
};

/**
 * A cache V8 rejects costs nothing in correctness (the script is compiled as it stands) and so would go
 * unnoticed: a one-shot command would only start slower. Each program's must be one this node reads.
 */
describe("the programs' code caches", () => {
  it.each(['mesh-host', 'meshctl'])('%s: the cache made at build time is accepted by this node', (program) => {
    const file = bundlePath(program);
    const script = compileBundle(file, readFileSync(`${file}.cache`));
    expect(script.cachedDataRejected).toBe(false);
  });

  it("mesh-host's holds the code of a warm apply, not only its modules' wrappers", () => {
    const file = bundlePath('mesh-host');
    const cold = compileBundle(file) as unknown as { createCachedData(): Buffer };
    // The same script before anything ran: the cache a cold build would make.
    expect(readFileSync(`${file}.cache`).length).toBeGreaterThan(2 * cold.createCachedData().length);
  });
});
