import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { HostConfig } from '../../core/config/config.js';
import { openBundle } from '../../core/declaration/bundle.js';
import { receiveDeclaration, type Received } from '../../core/declaration/load.js';
import { markOf, type Mark } from '../../core/declaration/order.js';
import type { Store } from '../../core/store/store.js';
import { writeDurably, writeWholeAsync } from '../../core/system/durable.js';
import { HostError, refused } from '../../core/system/errors.js';
import { HeldTrust } from './held-trust.js';
import { CARRIED_BUNDLE, KEPT_DECLARATION, KEPT_REVISION } from './host-paths.js';

/**
 * The kept declaration: the newest declaration the mesh said that this host accepted, exactly the
 * bytes the link delivered, durably; and beside it a hint of which value of the key it was. Which
 * delivery is kept is the lifecycle's decision; this only writes and reads it.
 */
export class KeptDeclaration {
  readonly path: string;
  private readonly revisionPath: string;

  constructor(readonly stateDir: string) {
    this.path = join(stateDir, KEPT_DECLARATION);
    this.revisionPath = join(stateDir, KEPT_REVISION);
  }

  exists(): boolean {
    return existsSync(this.path);
  }

  read(): Buffer {
    return readFileSync(this.path);
  }

  /** Kept before it is applied: a reconcile always finds the newest the mesh said. */
  keep(bytes: Uint8Array, revision: number, digest: string): void {
    writeDurably(this.path, bytes, 0o600);
    this.noteRevision(revision, digest);
  }

  /**
   * Which value of the key holds what this host applied. A hint, not a record: written whole (rename)
   * but not fsynced, because losing it in a crash costs only a redundant apply and report after the
   * restart, and an fsync would be on every delivery's path. Genesis notes the value the control side
   * put the bundle's declaration in, so the daemon does not apply it again as a delivery.
   */
  noteRevision(revision: number, digest: string): void {
    writeFileSync(`${this.revisionPath}.tmp`, JSON.stringify({ revision, digest }), { mode: 0o600 });
    renameSync(`${this.revisionPath}.tmp`, this.revisionPath);
  }

  /** noteRevision() off the event loop. */
  async noteRevisionAsync(revision: number, digest: string): Promise<void> {
    await writeWholeAsync(this.revisionPath, Buffer.from(JSON.stringify({ revision, digest })));
  }

  /** Settles once the declaration kept last is on disk: at once here, since keep() writes before it returns. */
  durable(): Promise<void> {
    return Promise.resolve();
  }

  /** Which value of the key was kept, as the hint says; nothing when there is no readable hint. */
  revision(): { revision: number; digest: string } | undefined {
    try {
      const hint = JSON.parse(readFileSync(this.revisionPath, 'utf8')) as { revision?: unknown; digest?: unknown };
      return typeof hint.revision === 'number' && typeof hint.digest === 'string' ? { revision: hint.revision, digest: hint.digest } : undefined;
    } catch {
      return undefined;
    }
  }

  /** Opens the kept declaration again, signature first: the file could have been changed since it was kept. */
  async receive(config: Pick<HostConfig, 'publicKey' | 'node'>): Promise<Received> {
    const rules = new HeldTrust(this.stateDir, config.publicKey).rules();
    if (rules.length === 0) throw refused('a kept declaration exists but no control-plane key is pinned in the configuration; nothing was touched', [], 'forged');
    // Kept when the version then in force accepted it: it opens under any version held, newest first
    // (a rotation does not make the declaration the host holds unreadable; a new one needs the newest).
    const bytes = this.read();
    let refusal: unknown;
    for (const rule of rules) {
      try {
        return await receiveDeclaration(bytes, { source: 'the kept declaration', rule, node: config.node, requireSignature: true });
      } catch (err) {
        if (!(err instanceof HostError) || (err.kind !== 'forged' && err.kind !== 'retired' && err.kind !== 'unapproved')) throw err;
        refusal ??= err;
      }
    }
    throw refusal;
  }

  /** Its order, or nothing when none is kept or it no longer opens. */
  async mark(config: Pick<HostConfig, 'publicKey' | 'node'>): Promise<Mark | undefined> {
    if (!this.exists()) return undefined;
    try {
      const { declaration, digest } = await this.receive(config);
      return markOf(declaration, digest);
    } catch {
      // Refused again by the reconcile, and said there; for ordering, nothing is kept.
      return undefined;
    }
  }
}

/** What a reconcile applies, and how. */
export interface ReconcileSource {
  received: Received;
  said: string[];
  mayChangeMode: boolean;
}

/** What a reconcile applies: what the mesh last said, or before it has spoken the bundle genesis applied. */
export async function reconcileSource(host: { config: HostConfig; store: Store; kept: KeptDeclaration }): Promise<ReconcileSource> {
  if (host.kept.exists()) {
    const received = await host.kept.receive(host.config);
    const recorded = host.store.state.mode;
    const said = recorded !== undefined && recorded !== received.declaration.mode
      ? [`the recorded mode was ${recorded}, the kept signed declaration says ${received.declaration.mode}: the kept declaration wins (repaired)`]
      : [];
    return { received, said, mayChangeMode: true };
  }
  const consumed = host.store.state.genesisDigest;
  if (consumed === undefined) throw refused('this machine is not enrolled and the mesh has not spoken: nothing to reconcile (mesh-host genesis BUNDLE enrols it)', [], 'state');
  const bundlePath = join(host.kept.stateDir, CARRIED_BUNDLE);
  if (!existsSync(bundlePath)) throw refused(`genesis applied ${consumed}, but the carried bundle ${bundlePath} is gone; nothing was touched`, [], 'state');
  const { received } = await openBundle(readFileSync(bundlePath), bundlePath);
  if (received.digest !== consumed) {
    throw refused(`the carried bundle's declaration is ${received.digest}, but genesis applied ${consumed}: only what genesis applied is reconciled; nothing was touched`, [], 'state');
  }
  return { received, said: [], mayChangeMode: false };
}
