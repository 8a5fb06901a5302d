import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openStore } from '../../src/engine/apply/open-store.js';
import { silentLogger } from '../../src/core/system/log.js';
import { Store } from '../../src/core/store/store.js';
import { LOCK_HOLDERS_FILES } from '../../src/host/env/open-host.js';
import { KEPT_DECLARATION } from '../../src/host/env/host-paths.js';
import { FAILED_TRIAL_FILE } from '../../src/host/release/layout.js';

/**
 * Found by a power cut in a real guest kernel (test/powercut/guest.test.ts, the burst of deliveries):
 * the cut fell while the daemon kept a delivery, between the temporary file's creation and its rename,
 * and the next start left `declared.json.tmp-PID-RANDOM` in the state directory for ever. The host's
 * open under the lock now removes the temporaries of the files only the lock's holder writes; those of
 * a file another process may be writing that moment (the launcher's memory of a failed trial) stay.
 */
describe('temporaries beside the kept declaration', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('are removed when the host opens its store, and another process\'s are left', async () => {
    dir = mkdtempSync(join(tmpdir(), 'mesh-host-kept-leftovers-'));
    Store.open(dir, silentLogger()).save();
    const cut = `${KEPT_DECLARATION}.tmp-181-e88505183d5d`;
    const launchers = `${FAILED_TRIAL_FILE}.tmp-77-0123456789ab`;
    writeFileSync(join(dir, cut), '{"half": ');
    writeFileSync(join(dir, launchers), '{}');
    writeFileSync(join(dir, KEPT_DECLARATION), '{}');
    await openStore(dir, silentLogger(), LOCK_HOLDERS_FILES);
    expect(existsSync(join(dir, cut))).toBe(false);
    expect(existsSync(join(dir, launchers))).toBe(true);
    expect(readdirSync(dir)).toContain(KEPT_DECLARATION);
  });
});
