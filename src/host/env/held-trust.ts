import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SignerRule } from '../../core/declaration/envelope.js';
import { openTrustRecord, pinnedKeyRoot, selfSignedProblem, signerRule, stepProblem, retiredKeys, type OpenedRoot, type TrustRecord, type TrustRoot } from '../../core/declaration/trust-root.js';
import { writeDurably } from '../../core/system/durable.js';
import { refused } from '../../core/system/errors.js';

/** The trust root versions this host holds, oldest first: the one genesis pinned, then each it followed. */
export const HELD_TRUST = 'trust.json';

interface HeldFile {
  records: TrustRecord[];
}

/** A version followed, or why it was not. */
export type Followed = { ok: true; version: number } | { ok: false; reason: string };

/**
 * The trust root as this host holds it: every version since the one genesis pinned, each checked
 * against the one before it, kept durably in the state directory. A host enrolled before trust roots
 * holds version 0, the one key its configuration pins, until the mesh's version 1 (signed by that key)
 * is followed.
 */
export class HeldTrust {
  private chain: TrustRoot[] = [];
  private records: TrustRecord[] = [];
  /** The rule of the chain held, made when first asked after the chain changed. */
  private made: { chain: readonly TrustRoot[]; rule: SignerRule } | undefined;
  readonly path: string;

  constructor(stateDir: string, private pinnedKey?: string) {
    this.path = join(stateDir, HELD_TRUST);
    this.load(pinnedKey);
  }

  /** Read again from the state directory (genesis wrote it, or another process followed a version), with the key the configuration pins. */
  load(pinnedKey = this.pinnedKey): void {
    this.pinnedKey = pinnedKey;
    this.records = [];
    this.chain = this.pinnedKey ? [pinnedKeyRoot(this.pinnedKey)] : [];
    if (!existsSync(this.path)) return;
    let file: HeldFile;
    try {
      file = JSON.parse(readFileSync(this.path, 'utf8')) as HeldFile;
      if (!Array.isArray(file.records) || file.records.length === 0) throw new Error('no records');
    } catch (err) {
      throw refused(`${this.path}: the trust root held is unreadable (${(err as Error).message}); nothing was touched`, [], 'state');
    }
    // Checked again as it was when followed: a file changed by hand is refused, not trusted.
    const opened: OpenedRoot[] = file.records.map((record, i) => {
      const r = openTrustRecord(record);
      if (!r.ok) throw refused(`${this.path}: record ${i}: ${r.reason}`, [], 'state');
      return r.opened;
    });
    const first = selfSignedProblem(opened[0]!);
    if (first) throw refused(`${this.path}: ${first}`, [], 'state');
    const roots = [opened[0]!.root];
    for (const next of opened.slice(1)) {
      const problem = stepProblem(roots[roots.length - 1]!, next);
      if (problem) throw refused(`${this.path}: ${problem}`, [], 'state');
      roots.push(next.root);
    }
    // Version 0 stays before a version 1 followed from it: its key, if dropped, is named as retired.
    const fromPinned = this.chain.length > 0 && roots[0]!.version === 1;
    this.chain = fromPinned ? [...this.chain, ...roots] : roots;
    this.records = file.records;
  }

  /** The version held, or undefined when nothing is pinned at all. */
  version(): number | undefined {
    return this.chain[this.chain.length - 1]?.version;
  }

  newest(): TrustRoot | undefined {
    return this.chain[this.chain.length - 1];
  }

  /** What a new declaration must be signed by: the newest version's control keys. */
  rule(): SignerRule | undefined {
    if (this.chain.length === 0) return undefined;
    // Made once for each chain held (its keys decoded with it), not again for every delivery.
    if (this.made?.chain !== this.chain) this.made = { chain: this.chain, rule: signerRule(this.chain) };
    return this.made.rule;
  }

  /**
   * Each version's rule, newest first: a declaration kept when an earlier version was in force (signed
   * by a key retired since) still opens, as the one this host accepted then.
   */
  rules(): SignerRule[] {
    return this.chain.map((_, i) => signerRule(this.chain.slice(0, i + 1))).reverse();
  }

  /** Keys of earlier versions the newest no longer holds. */
  retired(): Map<string, number> {
    return retiredKeys(this.chain);
  }

  /** Follows one version: exactly the next, signed as the held one and its own keys require; kept durably before it counts. */
  follow(bytes: Uint8Array): Followed {
    const held = this.newest();
    if (!held) return { ok: false, reason: 'no trust root is pinned on this host' };
    let value: unknown;
    try {
      value = JSON.parse(Buffer.from(bytes).toString('utf8'));
    } catch (err) {
      return { ok: false, reason: `not JSON: ${(err as Error).message}` };
    }
    const opened = openTrustRecord(value);
    if (!opened.ok) return { ok: false, reason: `the record is refused whole: ${opened.reason}` };
    const problem = stepProblem(held, opened.opened, this.retired());
    if (problem) return { ok: false, reason: problem };
    const records = [...this.records, opened.opened.record];
    writeDurably(this.path, Buffer.from(JSON.stringify({ records } satisfies HeldFile)), 0o600);
    this.records = records;
    this.chain = [...this.chain, opened.opened.root];
    return { ok: true, version: opened.opened.root.version };
  }
}

/** Pins a version on its own word (genesis: the bundle carries it): it must be signed by its own threshold. */
export function pinTrust(stateDir: string, record: TrustRecord): void {
  writeDurably(join(stateDir, HELD_TRUST), Buffer.from(JSON.stringify({ records: [record] } satisfies HeldFile)), 0o600);
}
