import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pinnedKeyRoot, signerRule } from '../../src/core/declaration/trust-root.js';
import fc from 'fast-check';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { applyDeclaration } from '../../src/engine/apply/apply.js';
import { applyCommand } from '../../src/host/commands/apply-command.js';
import { reconcileCommand } from '../../src/host/commands/reconcile-command.js';
import type { CommandContext } from '../../src/cli/context.js';
import { loadConfig } from '../../src/core/config/config.js';
import { DeliveryIntake } from '../../src/host/daemon/intake.js';
import { checkedOf } from '../../src/host/daemon/remembered-kept.js';
import type { Delivery, LifecycleEvent } from '../../machines/lifecycle.js';
import { newNkeySeed, nkeySeed } from '../../src/core/declaration/nkey.js';
import { genesis } from '../../src/host/genesis/genesis.js';
import { hostEnvironment, serviceManagerOnce } from '../../src/host/env/host-environment.js';
import { KeptDeclaration } from '../../src/host/env/kept-declaration.js';
import { withLockedStore } from '../../src/host/env/open-host.js';
import type { HostPaths } from '../../src/host/env/host-paths.js';
import { HostError, type RefusalKind } from '../../src/core/system/errors.js';
import { systemClock } from '../../src/core/system/clock.js';
import { silentLogger } from '../../src/core/system/log.js';
import { systemRunner } from '../../src/core/system/runner.js';
import { hashTree, scratch } from '../support/tree.js';
import { declarationMutations, envelopeMutations, envelopeOf, missingField, notJson, unknownField, wrongType, type JsonObject, type Mutated } from './mutations.js';

/**
 * Invalid declarations, envelopes and bundles, made by mutating valid ones, through the one gate on
 * every path it guards: `apply FILE`, genesis, a delivery the daemon's intake takes, the reconcile of
 * a kept declaration. None may be accepted, and neither the scratch root nor the state directory may
 * change (fingerprinted before and after every input). MESH_FUZZ_COUNT sets how many in all
 * (`npm run fuzz`: 100,000); without it, a count that fits the suite's time.
 */
const COUNT = Number(process.env.MESH_FUZZ_COUNT ?? 2_000);
const PER_PATH = Math.ceil(COUNT / 4);
/** Generous: a loaded machine; the full count runs far longer than the suite's default. */
const TIMEOUT = 120_000 + PER_PATH * 60;

const NODE = 'fuzz-node';
const deps = { log: silentLogger(), clock: systemClock, runner: systemRunner() };
const operator = nkeySeed(newNkeySeed('operator'), 'operator') as Exclude<ReturnType<typeof nkeySeed>, string>;
const stranger = nkeySeed(newNkeySeed('operator'), 'operator') as Exclude<ReturnType<typeof nkeySeed>, string>;

/** A valid declaration of this node: every mutation starts from one (numbered after what is applied). */
const valid = (sequence: number, epoch = 2): JsonObject => ({
  version: 1,
  node: NODE,
  mode: 'converged',
  epoch,
  sequence,
  resources: [
    { type: 'directory', id: 'app', path: '/srv/app', mode: '0755', owner: 'root', group: '0' },
    { type: 'file', id: 'conf', path: '/srv/app/app.conf', content: 'x=1\n', mode: '0640', take: true },
    { type: 'file', id: 'blob', path: '/srv/app/blob', content: 'aGVsbG8gd29ybGQ=', encoding: 'base64' },
    { type: 'directory', id: 'data', path: '/srv/data' },
  ],
});
const APPLIED = 5;
const NEXT = valid(APPLIED + 1);

/** Every field name of the vocabulary, wherever it may stand: an added field is unknown only when it is none of them. */
const KNOWN = new Set(['version', 'node', 'mode', 'epoch', 'sequence', 'resources', 'type', 'id', 'path', 'owner', 'group', 'take', 'content', 'encoding', 'sensitive', 'sha256', 'source', 'inline', 'object', 'unit', 'state', 'enabled', 'restartOn', 'reload']);
const REQUIRED_HEAD = new Set(['version', 'node', 'mode', 'sequence', 'resources']);
const REQUIRED_RESOURCE = new Set(['type', 'id', 'path', 'content']);
const requiredField = (place: Array<string | number>) =>
  place.length === 1 ? REQUIRED_HEAD.has(place[0] as string) : place.length === 3 && place[0] === 'resources' && REQUIRED_RESOURCE.has(place[2] as string);
const BUNDLE_KNOWN = new Set(['version', 'node', 'link', 'publicKey', 'declaration', 'keyRevision', 'secrets', 'servers', 'creds', 'nkeySeed', 'tls', 'ca', 'cert', 'key', 'nodeKey', 'payload', 'signature']);
const BUNDLE_REQUIRED = new Set(['version', 'node', 'link', 'publicKey', 'declaration', 'servers', 'payload', 'key', 'signature']);

const bytesOf = (v: unknown) => Buffer.from(JSON.stringify(v));
const signed = (declaration: JsonObject, key = operator) => envelopeOf(bytesOf(declaration), key);

/** A valid declaration of the vocabulary that the gate refuses here: older, the same order with another digest, another node, the other mode. */
function refusedByTheGate(options: { modeMatters: boolean }): fc.Arbitrary<Mutated> {
  const older: fc.Arbitrary<Mutated> = fc.oneof(
    fc.integer({ min: 0, max: APPLIED - 1 }).map((sequence) => ({ what: `older: sequence ${sequence}`, value: valid(sequence), kinds: STALE })),
    fc.integer({ min: 0, max: 1 }).chain((epoch) => fc.integer({ min: 0, max: 10_000 }).map((sequence) => ({ what: `older: epoch ${epoch}, sequence ${sequence}`, value: valid(sequence, epoch), kinds: STALE }))),
    fc.constant<Mutated>({ what: 'the applied (epoch, sequence) with another digest', value: { ...valid(APPLIED), resources: [] }, kinds: STALE }),
  );
  const arbs = [older, fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/).filter((n) => n !== NODE).map((node): Mutated => ({ what: `for node ${node}`, value: { ...NEXT, node }, kinds: ['wrong-node'] }))];
  if (options.modeMatters) arbs.push(fc.constant<Mutated>({ what: 'the other mode', value: { ...NEXT, mode: 'adopted' }, kinds: ['mode'] }));
  return fc.oneof(...arbs);
}

const STALE: readonly RefusalKind[] = ['stale'];

/** An input: its bytes, what was done to make it, and the refusal kinds it must meet. */
interface Input {
  what: string;
  bytes: Buffer;
  kinds: readonly RefusalKind[];
}
const asInput = (m: Mutated): Input => ({ what: m.what, bytes: bytesOf(m.value), kinds: m.kinds });
const signedInput = (m: Mutated): Input => ({ what: `${m.what} (signed)`, bytes: bytesOf(signed(m.value)), kinds: m.kinds });
/** A plain declaration where only a signed envelope will do: whatever else is wrong with it, it is not signed. */
const unsignedInput = (m: Mutated): Input => ({ what: `${m.what} (not signed)`, bytes: bytesOf(m.value), kinds: ['forged'] });

/** What a path did with an input: refused (with its typed kind and what it said), or accepted. */
type Outcome = { refused: true; kind: RefusalKind; said: string } | { refused: false; said: string };

function refusalOf(err: unknown): Outcome {
  if (err instanceof HostError && err.exitCode === 3 && err.kind !== undefined) return { refused: true, kind: err.kind, said: [err.message, ...err.details].join('; ') };
  throw err;
}

interface ScratchHost {
  paths: HostPaths;
  dir: string;
  fingerprint(): string;
  cleanup(): void;
}

/** A scratch root with files of its own, a state directory and a configuration. */
function scratchHost(name: string): ScratchHost {
  const s = scratch(`mesh-host-fuzz-${name}-`);
  const paths = { root: join(s.dir, 'root'), stateDir: join(s.dir, 'state'), configPath: join(s.dir, 'host.json') };
  mkdirSync(join(paths.root, 'srv/app'), { recursive: true });
  mkdirSync(join(paths.root, 'etc'), { recursive: true });
  writeFileSync(join(paths.root, 'etc/hosts'), '127.0.0.1 localhost\n');
  writeFileSync(join(paths.root, 'srv/app/app.conf'), 'found here\n');
  return {
    paths,
    dir: s.dir,
    // Type, mode, owner, content and inode of everything under both: a rewrite with the same bytes shows too.
    fingerprint: () => JSON.stringify([hashTree(paths.root), existsSync(paths.stateDir) ? hashTree(paths.stateDir) : 'absent']),
    cleanup: s.cleanup,
  };
}

function context(host: ScratchHost, args: string[]): CommandContext {
  return {
    args,
    flags: { root: host.paths.root, 'state-dir': host.paths.stateDir, config: host.paths.configPath },
    json: true,
    print: () => {},
    ...deps,
  };
}

const tally = new Map<string, Map<string, number>>();
/** Each path's run, written to MESH_FUZZ_FIGURES when set (the benchmark's fuzz part reads it for docs/bench.md). */
const figures: Array<{ path: string; inputs: number; ms: number; kinds: Record<string, number> }> = [];
function count(path: string, kind: string): void {
  const t = tally.get(path) ?? new Map<string, number>();
  t.set(kind, (t.get(kind) ?? 0) + 1);
  tally.set(path, t);
}

/** Runs the inputs through one path, checking after each that it was refused, typed, said, and that nothing changed. */
async function fuzz(path: string, host: ScratchHost, inputs: fc.Arbitrary<Input>, run: (input: Input) => Promise<Outcome>, after?: () => void): Promise<void> {
  const before = host.fingerprint();
  const started = performance.now();
  await fc.assert(
    fc.asyncProperty(inputs, async (input) => {
      const outcome = await run(input);
      after?.();
      if (!outcome.refused) throw new Error(`accepted: ${input.what}: ${outcome.said}`);
      // Refused for the reason the mutation gave it, not for another.
      if (!input.kinds.includes(outcome.kind)) throw new Error(`refused as ${outcome.kind}, where ${input.what} must be refused as ${input.kinds.join(' or ')}: ${outcome.said}`);
      // A refusal says what was wrong: an invalid input names its JSON path or why it is not one.
      if (outcome.said.trim() === '') throw new Error(`refused without saying why: ${input.what}`);
      if (host.fingerprint() !== before) throw new Error(`the scratch root or the state directory changed after: ${input.what}`);
      count(path, outcome.kind);
    }),
    { numRuns: PER_PATH, endOnFailure: true },
  );
  const ms = performance.now() - started;
  const kinds = Object.fromEntries(tally.get(path) ?? []);
  figures.push({ path, inputs: PER_PATH, ms: Math.round(ms), kinds });
  console.log(`fuzz ${path}: ${PER_PATH} inputs refused in ${(ms / 1000).toFixed(1)} s (${((ms * 1000) / PER_PATH).toFixed(0)} µs each); by kind ${JSON.stringify(kinds)}`);
}

describe(`the one gate, ${COUNT} generated invalid inputs across its four paths`, () => {
  const hosts: ScratchHost[] = [];
  const made = (name: string) => {
    const h = scratchHost(name);
    hosts.push(h);
    return h;
  };
  afterAll(() => {
    hosts.forEach((h) => h.cleanup());
    if (process.env.MESH_FUZZ_FIGURES) writeFileSync(process.env.MESH_FUZZ_FIGURES, JSON.stringify(figures));
  });

  const bundleOf = (declaration: JsonObject, extra: JsonObject = {}): JsonObject => ({ version: 1, node: NODE, link: { servers: [] }, publicKey: operator.publicKey, declaration: signed(declaration), ...extra });
  /** Enrols a scratch host through the one genesis path with the applied declaration. */
  async function enrolled(name: string): Promise<ScratchHost> {
    const h = made(name);
    const result = await genesis(h.paths, deps, { bytes: bytesOf(bundleOf(valid(APPLIED))), source: 'bundle.json', mode: 'converged', dryRun: false });
    expect(result.kind).toBe('applied');
    return h;
  }

  let applyHost: ScratchHost;
  let inputDir: string;
  beforeAll(async () => {
    applyHost = made('apply');
    inputDir = made('inputs').dir;
    writeFileSync(applyHost.paths.configPath, JSON.stringify({ node: NODE }));
    const first = join(inputDir, 'first.json');
    writeFileSync(first, JSON.stringify(valid(APPLIED)));
    expect(await applyCommand(context(applyHost, [first]))).toBe(0);
  });

  it('apply FILE: plain declarations, envelopes and bytes that are not JSON', async () => {
    const file = join(inputDir, 'declaration.json');
    const inputs = fc.oneof(
      { weight: 6, arbitrary: declarationMutations(NEXT, KNOWN, requiredField).map(asInput) },
      { weight: 2, arbitrary: refusedByTheGate({ modeMatters: true }).map(asInput) },
      { weight: 1, arbitrary: declarationMutations(NEXT, KNOWN, requiredField).map(signedInput) },
      { weight: 2, arbitrary: envelopeMutations(signed(NEXT), stranger, false, 'invalid').map(asInput) },
      { weight: 1, arbitrary: notJson(JSON.stringify(NEXT)) },
    );
    await fuzz('apply FILE', applyHost, inputs, async (input) => {
      writeFileSync(file, input.bytes);
      try {
        const code = await applyCommand(context(applyHost, [file]));
        return { refused: false, said: `exit ${code}` };
      } catch (err) {
        return refusalOf(err);
      }
    });
  }, TIMEOUT);

  it('genesis: bundles with a broken field, envelope or declaration, on an unenrolled machine', async () => {
    const h = made('genesis');
    const bundle = bundleOf(NEXT);
    const inBundle = (m: Mutated): Input => ({ what: `${m.what} (in the bundle)`, bytes: bytesOf({ ...bundle, declaration: m.value }), kinds: m.kinds });
    const declared = (m: Mutated): Input => ({ what: `${m.what} (the bundle's declaration)`, bytes: bytesOf({ ...bundle, declaration: signed(m.value) }), kinds: m.kinds });
    // A field of the bundle's envelope of another kind is a signature that cannot be taken; anything else of another kind is outside the vocabulary.
    const envelopeField = (place: Array<string | number>): readonly RefusalKind[] => (place.length === 2 && place[0] === 'declaration' ? ['forged'] : ['invalid']);
    const inputs = fc.oneof(
      { weight: 3, arbitrary: fc.oneof(wrongType(bundle, envelopeField), unknownField(bundle, BUNDLE_KNOWN), missingField(bundle, (p) => typeof p.at(-1) === 'string' && BUNDLE_REQUIRED.has(p.at(-1) as string))).map(asInput) },
      { weight: 4, arbitrary: declarationMutations(NEXT, KNOWN, requiredField).map(declared) },
      { weight: 2, arbitrary: envelopeMutations(signed(NEXT), stranger, true, 'invalid').map(inBundle) },
      { weight: 1, arbitrary: fc.oneof<Array<fc.Arbitrary<Mutated>>>(
        fc.constant({ what: 'the other mode', value: { ...bundle, declaration: signed({ ...NEXT, mode: 'adopted' }) }, kinds: ['mode'] }),
        fc.constant({ what: 'a declaration for another node', value: { ...bundle, declaration: signed({ ...NEXT, node: 'other' }) }, kinds: ['wrong-node'] }),
        fc.constant({ what: 'signed by a key the bundle does not pin', value: { ...bundle, declaration: signed(NEXT, stranger) }, kinds: ['forged'] }),
        fc.oneof(fc.integer({ max: 0 }), fc.double({ noNaN: true }).filter((d) => !Number.isInteger(d))).map((keyRevision) => ({ what: `keyRevision ${keyRevision}`, value: { ...bundle, keyRevision }, kinds: ['invalid'] })),
        fc.string({ maxLength: 60 }).filter((k) => !/^O[A-Z2-7]{55}$/.test(k)).map((publicKey) => ({ what: `publicKey ${JSON.stringify(publicKey)}`, value: { ...bundle, publicKey }, kinds: ['invalid'] })),
        fc.string({ maxLength: 80 }).map((nodeKey) => ({ what: `secrets.nodeKey ${JSON.stringify(nodeKey)}`, value: { ...bundle, secrets: { nodeKey } }, kinds: ['invalid'] })),
      ).map(asInput) },
      { weight: 1, arbitrary: notJson(JSON.stringify(bundle)) },
    );
    await fuzz('genesis', h, inputs, async (input) => {
      try {
        const result = await genesis(h.paths, deps, { bytes: input.bytes, source: 'bundle.json', mode: 'converged', dryRun: false });
        return result.kind === 'refused' ? { refused: true, kind: result.refusal, said: [result.reason, ...result.details].join('; ') } : { refused: false, said: result.kind };
      } catch (err) {
        return refusalOf(err);
      }
    });
  }, TIMEOUT);

  it("a delivery: the daemon's intake, then the one apply path for what it hands on", async () => {
    const h = await enrolled('delivery');
    const { config } = loadConfig(h.paths.configPath);
    const inputs = fc.oneof(
      { weight: 3, arbitrary: envelopeMutations(signed(NEXT), stranger, true, 'forged').map(asInput) },
      { weight: 4, arbitrary: declarationMutations(NEXT, KNOWN, requiredField).map(signedInput) },
      { weight: 2, arbitrary: refusedByTheGate({ modeMatters: false }).map(signedInput) },
      { weight: 1, arbitrary: declarationMutations(NEXT, KNOWN, requiredField).map(unsignedInput) },
      { weight: 1, arbitrary: notJson(JSON.stringify(signed(NEXT))) },
    );
    let revision = 100;
    await fuzz('delivery', h, inputs, async (input) => {
      const taken = await new Promise<Outcome | { delivered: Delivery }>((resolve) => {
        // The lifecycle the intake tells: what it says is what the fuzz looks at.
        const lifecycle = {
          send: (event: LifecycleEvent) => {
            if (event.type === 'REFUSED') resolve({ refused: true, kind: event.refused.kind, said: event.refused.message });
            else if (event.type === 'DELIVERY') resolve({ delivered: event.delivery });
          },
        };
        const intake = new DeliveryIntake({ config: () => config, log: deps.log, rule: () => signerRule([pinnedKeyRoot(config.publicKey!)]), catchUpTrust: async () => undefined, lifecycle: () => lifecycle });
        intake.take({ bytes: input.bytes, revision: ++revision });
      });
      if (!('delivered' in taken)) return taken;
      // What the intake checked, carried by the delivery, goes through the one apply path (its order
      // checked there: no lifecycle ordered it here).
      const remembered = checkedOf(taken.delivered);
      expect(remembered?.digest).toBe(taken.delivered.digest);
      const result = await withLockedStore(h.paths.stateDir, deps.log, { command: 'fuzz', timeoutMs: 10_000 }, async (store) => {
        const env = hostEnvironment({ paths: h.paths, config, store, deps, serviceManager: serviceManagerOnce(deps.runner, config) });
        return applyDeclaration(env, { received: remembered!, origin: 'mesh', trigger: 'delivery', dryRun: false, mayChangeMode: true });
      });
      return result.kind === 'refused' ? { refused: true, kind: result.refusal, said: [result.reason, ...result.details].join('; ') } : { refused: false, said: result.kind };
    });
  }, TIMEOUT);

  it('reconcile: a kept declaration changed on disk', async () => {
    const h = await enrolled('reconcile');
    // The mesh has spoken: what it said is kept and reconciled (applied once here).
    const kept = new KeptDeclaration(h.paths.stateDir);
    kept.keep(bytesOf(signed(valid(APPLIED + 1))), 7, 'sha256:none');
    expect(await reconcileCommand(context(h, []))).toBe(0);
    const keptBytes = readFileSync(kept.path);
    const inputs = fc.oneof(
      { weight: 3, arbitrary: envelopeMutations(signed(NEXT), stranger, true, 'forged').map(asInput) },
      { weight: 4, arbitrary: declarationMutations(NEXT, KNOWN, requiredField).map(signedInput) },
      { weight: 2, arbitrary: refusedByTheGate({ modeMatters: false }).map(signedInput) },
      { weight: 1, arbitrary: notJson(JSON.stringify(signed(NEXT))) },
    );
    await fuzz('reconcile', h, inputs, async (input) => {
      writeFileSync(kept.path, input.bytes);
      try {
        const code = await reconcileCommand(context(h, []));
        return { refused: false, said: `exit ${code}` };
      } catch (err) {
        return refusalOf(err);
      }
    // The kept declaration is the input: put back before the fingerprint is compared.
    }, () => writeFileSync(kept.path, keptBytes));
  }, TIMEOUT);
});
