import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { peekState } from '../../src/core/store/store.js';
import { OUTBOX_DIR } from '../../src/engine/report/outbox.js';
import { leaks } from './leaks.js';
import { engineContainers, engineUp } from './guest-engine.js';

/**
 * Run inside the guest (by the node on the tools disk, bundled into one file by the harness); each
 * answer is one marked line for the harness to read off the serial console.
 *
 *   leaks ROOT STATE_DIR FOUND_JSON   what the data disk's root and state directory hold that the store
 *                                     does not account for, and what it records that is missing (see
 *                                     leaks); FOUND_JSON lists what the root held before the host came
 *   leaks-state STATE_DIR             the same, of the state directory alone
 *   settled STATE_DIR SEQUENCE SECS   waits (reading the store without its lock, beside a running
 *                                     daemon) until the declaration SEQUENCE is the last applied and
 *                                     the outbox is empty: every report made has been acknowledged
 *   engine SOCKET SECS                waits until a container engine answers on SOCKET: the seconds
 *   containers SOCKET STATE_DIR       every container the engine has against those the store records
 *                                     (see guest-engine.ts)
 */
const [command, ...args] = process.argv.slice(2);

function outboxCount(stateDir: string): number {
  try {
    return readdirSync(join(stateDir, OUTBOX_DIR)).filter((name) => /^\d+\.json$/.test(name)).length;
  } catch {
    return 0;
  }
}

async function settled(stateDir: string, sequence: number, seconds: number): Promise<string> {
  const until = Date.now() + seconds * 1000;
  for (;;) {
    let applied: number | undefined;
    try {
      applied = peekState(stateDir)?.lastApplied?.sequence;
    } catch {
      // Read while the daemon renames it in: read again.
    }
    const waiting = outboxCount(stateDir);
    if (applied === sequence && waiting === 0) return 'yes';
    if (Date.now() > until) return `no: applied ${applied ?? 'none'}, ${waiting} reports in the outbox`;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

if (command === 'leaks') {
  const [root, stateDir, foundFile] = args;
  const found = new Set(JSON.parse(readFileSync(foundFile!, 'utf8')) as string[]);
  process.stdout.write(`MESH-GUEST:leaks ${JSON.stringify(leaks({ root: root!, stateDir: stateDir! }, found))}\n`);
} else if (command === 'leaks-state') {
  process.stdout.write(`MESH-GUEST:leaks ${JSON.stringify(leaks({ stateDir: args[0]! }))}\n`);
} else if (command === 'settled') {
  const [stateDir, sequence, seconds] = args;
  process.stdout.write(`MESH-GUEST:settled ${await settled(stateDir!, Number(sequence), Number(seconds))}\n`);
} else if (command === 'engine') {
  process.stdout.write(`MESH-GUEST:engine ${await engineUp(args[0]!, Number(args[1]))}\n`);
} else if (command === 'containers') {
  // An engine that cannot list is an answer too (podman after a cut may be one): said, not thrown.
  const seen = await engineContainers(args[0]!, args[1]!).catch((err: Error) => ({ error: err.message.slice(0, 500) }));
  process.stdout.write(`MESH-GUEST:containers ${JSON.stringify(seen)}\n`);
} else {
  throw new Error(`guest-check: leaks, leaks-state, settled, engine or containers (not ${command})`);
}
