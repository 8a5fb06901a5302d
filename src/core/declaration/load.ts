import { jsonSyntaxMessage } from './json-syntax.js';
import { closeSync, fstatSync, openSync } from 'node:fs';
import { readFully } from '../system/read.js';
import { refused } from '../system/errors.js';
import { yielder } from '../system/yielder.js';
import type { Declaration } from './schema.js';
import { digestOf, isEnvelope, openEnvelope, type SignerRule } from './envelope.js';
import { pinnedKeyRoot, signerRule } from './trust-root.js';
import { validateDeclaration, type Problem } from './validate.js';

/** A declaration over this size is refused before it is parsed. */
export const MAX_DECLARATION_BYTES = 64 * 1024 * 1024;

export interface Received {
  declaration: Declaration;
  /** `sha256:` of the payload bytes (the signed bytes for an envelope, the file for a plain one). */
  digest: string;
  /** The key that signed it, when it came in an envelope (the first, when several did). */
  signedBy?: string;
  /** Every distinct key whose signature was counted. */
  signers?: string[];
  /** Exactly the bytes received (the envelope's, when signed). */
  bytes: Buffer;
}

export interface ReceiveOptions {
  /** The keys that must sign, as the trust root the host holds says. */
  rule?: SignerRule;
  /** One key pinned (a host enrolled before trust roots, a bundle without one): its version 0. */
  pinnedKey?: string;
  node?: string;
  /** Refuse a plain declaration: only a signed envelope will do (the link, genesis). */
  requireSignature?: boolean;
  /** Names the source in refusals: a file path, "the bundle", "the kept declaration". */
  source: string;
}

function refuseProblems(source: string, problems: Problem[]): never {
  throw refused(
    `${source}: declaration refused (${problems.length} problem${problems.length === 1 ? '' : 's'}); nothing was touched`,
    problems.map((p) => `${p.path}: ${p.message}`),
    // Another node's declaration is refused as such only when it is one of the vocabulary: a node name
    // (or anything else) outside it makes the whole invalid.
    problems.every((p) => p.wrongNode) ? 'wrong-node' : 'invalid',
  );
}

function parseJson(bytes: Buffer, source: string, what: string): unknown {
  const text = bytes.toString('utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    // Only a refusal says where the syntax broke: a declaration that parses goes no further than JSON.parse.
    throw refused(`${source}: ${what} is not JSON: ${jsonSyntaxMessage(text, err)}; nothing was touched`);
  }
}

/** From bytes to a checked declaration: size, signature (before the payload is parsed), schema. */
export async function receiveDeclaration(bytes: Buffer, options: ReceiveOptions): Promise<Received> {
  if (bytes.length > MAX_DECLARATION_BYTES) {
    throw refused(`${options.source}: ${bytes.length} bytes is over the bound of ${MAX_DECLARATION_BYTES}; not parsed, nothing was touched`);
  }
  // For a megabyte each step holds the event loop tens of milliseconds (more on a loaded machine), and
  // a parse cannot be cut finer: the loop is let go between them once a slice has passed, and the
  // validation yields as it goes, so a daemon keeps answering while a large delivery is checked. A small
  // declaration never waits.
  const pause = yielder();
  const outer = parseJson(bytes, options.source, 'the document');
  await pause();
  let payload = bytes;
  let digest: string | undefined;
  let signedBy: string | undefined;
  let signers: string[] = [];
  if (isEnvelope(outer)) {
    const rule = options.rule ?? (options.pinnedKey === undefined ? undefined : signerRule([pinnedKeyRoot(options.pinnedKey)]));
    const opened = openEnvelope(outer, rule);
    if (!opened.ok) throw refused(`${options.source}: signature refused: ${opened.reason}; nothing was touched`, [], opened.kind);
    payload = opened.payload;
    signedBy = opened.keys[0];
    signers = opened.keys;
    digest = opened.digest;
  } else if (options.requireSignature) {
    throw refused(`${options.source}: not a signed envelope ({payload, key, signature}); nothing was touched`, [], 'forged');
  }
  await pause();
  const value = signedBy === undefined ? outer : parseJson(payload, options.source, 'the signed payload');
  await pause();
  const validated = await validateDeclaration(value, { ...(options.node === undefined ? {} : { node: options.node }), pause });
  if (!validated.ok) refuseProblems(options.source, validated.problems);
  return { declaration: validated.declaration, digest: digest ?? digestOf(payload), bytes, ...(signedBy ? { signedBy, signers } : {}) };
}

/** Reads a declaration file, refusing one over the bound before reading it whole. */
export function readDeclarationFile(path: string): Buffer {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (err) {
    throw refused(`${path}: cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  try {
    const size = fstatSync(fd).size;
    if (size > MAX_DECLARATION_BYTES) {
      throw refused(`${path}: ${size} bytes is over the bound of ${MAX_DECLARATION_BYTES}; not parsed, nothing was touched`);
    }
    return readFully(fd, size);
  } finally {
    closeSync(fd);
  }
}
