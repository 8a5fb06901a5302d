import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { writeDurably } from '../../core/system/durable.js';
import { refused } from '../../core/system/errors.js';
import { MESH_LAYOUT } from './mesh-dir.js';

/** One NATS user meshctl issued for a node: its public key, when, and when it was revoked. */
export interface IssuedUser {
  user: string;
  issuedAt: string;
  revokedAt?: string;
}

/**
 * A node's users as the mesh directory records them: `meshctl node-creds` adds each one it issues, so
 * that `node-remove` and `node-creds --rotate` know whom to revoke (a credentials file given to a host
 * is not kept).
 */
export interface NodeUsers {
  node: string;
  users: IssuedUser[];
}

/** The node's record; an empty one when meshctl issued it nothing from this directory. */
export function readNodeUsers(dir: string, node: string): NodeUsers {
  const path = join(dir, MESH_LAYOUT.nodeUsers(node));
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { node, users: [] };
    throw refused(`${path} cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  try {
    const record = JSON.parse(text) as NodeUsers;
    if (record.node !== node || !Array.isArray(record.users) || !record.users.every((u) => typeof u.user === 'string' && typeof u.issuedAt === 'string')) throw new Error('not a record of a node\'s users');
    return record;
  } catch (err) {
    throw refused(`${path}: ${(err as Error).message}; nothing was changed`);
  }
}

/** Writes the node's record whole (a crash leaves the old one or the new one). */
export function writeNodeUsers(dir: string, record: NodeUsers): void {
  const path = join(dir, MESH_LAYOUT.nodeUsers(record.node));
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  writeDurably(path, Buffer.from(`${JSON.stringify(record, null, 2)}\n`), 0o644);
}

/** The node's users not revoked yet. */
export const liveUsers = (record: NodeUsers) => record.users.filter((u) => u.revokedAt === undefined).map((u) => u.user);

/** The record with these users marked revoked at `at` (one not recorded is added, revoked). */
export function withRevoked(record: NodeUsers, users: string[], at: string): NodeUsers {
  const kept = record.users.map((u) => (users.includes(u.user) && u.revokedAt === undefined ? { ...u, revokedAt: at } : u));
  const unrecorded = users.filter((user) => !record.users.some((u) => u.user === user)).map((user) => ({ user, issuedAt: 'unknown', revokedAt: at }));
  return { node: record.node, users: [...kept, ...unrecorded] };
}
