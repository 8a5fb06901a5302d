import type { NatsConnection } from '@nats-io/transport-node';
import { digestOf, isEnvelope } from '../../core/declaration/envelope.js';
import { markOf, orderIn } from '../../core/declaration/order.js';
import type { Enrolments } from '../../link/enrolment.js';
import { DECLARATIONS_STREAM, declarationSubject, inventorySubject, statusSubject } from '../../link/wire.js';
import { lazy } from '../../core/system/interop.js';
import type { DeclarationView, InventoryAnswer, NodeView, PageRow, ResourceView, StatusAnswer } from '../page/page-wire.js';
import { nodeReports } from './reports.js';
import { historyLines, readHistory } from '../fleet/history.js';

/** What a node's page is first given: its row, its newest reports and the declaration the mesh holds for it. */
export async function nodeView(nc: NatsConnection, node: string, row: PageRow | null, enrolments: Promise<Enrolments>, nowMs: number): Promise<NodeView> {
  const [{ reports, held }, declaration, history] = await Promise.all([nodeReports(nc, node, enrolments), keptDeclaration(nc, node), readHistory(nc, node, enrolments)]);
  return { nowMs, node, row, reports, reportsHeld: held, declaration, history: historyLines(history, HISTORY_SHOWN), historyHeld: history.length };
}

/** How many of a node's declarations its page lists: the newest. */
export const HISTORY_SHOWN = 50;

/** The node's key as the mesh holds it, read without a consumer: the last message of its subject. */
async function keptDeclaration(nc: NatsConnection, node: string): Promise<DeclarationView | null> {
  const { jetstreamManager } = await lazy(import('@nats-io/jetstream'));
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  const stored = await jsm.streams.getMessage(DECLARATIONS_STREAM, { last_by_subj: declarationSubject(node) }).catch(() => null);
  if (!stored || stored.data.length === 0) return null;
  return declarationView(stored.data);
}

/** A declaration's envelope as the page may show it; null when it is not one. */
export function declarationView(bytes: Uint8Array): DeclarationView | null {
  let envelope: unknown;
  let declaration: { epoch?: unknown; sequence?: unknown; mode?: unknown; resources?: unknown };
  try {
    envelope = JSON.parse(Buffer.from(bytes).toString('utf8'));
    if (!isEnvelope(envelope)) return null;
    declaration = JSON.parse(Buffer.from(envelope.payload, 'base64').toString('utf8')) as typeof declaration;
  } catch {
    return null;
  }
  const order = orderIn(declaration);
  if (!order) return null;
  const payload = Buffer.from(envelope.payload, 'base64');
  const resources = Array.isArray(declaration.resources) ? declaration.resources.map(resourceView) : [];
  return { mark: markOf(order, digestOf(payload)), mode: String(declaration.mode), resources };
}

const text = (value: unknown) => (typeof value === 'string' ? value : undefined);

/**
 * One resource, only its name and where it acts: a file's content, a container's env, command or
 * volumes are never taken, whether or not they are marked sensitive.
 */
export function resourceView(resource: unknown): ResourceView {
  const r = (typeof resource === 'object' && resource !== null ? resource : {}) as Record<string, unknown>;
  const optional = (name: 'state' | 'mode' | 'owner' | 'group') => (text(r[name]) === undefined ? {} : { [name]: text(r[name]) });
  return {
    type: text(r.type) ?? '?',
    id: text(r.id) ?? '?',
    target: text(r.path) ?? text(r.unit) ?? text(r.name) ?? '',
    ...optional('state'),
    ...optional('mode'),
    ...optional('owner'),
    ...optional('group'),
    ...(r.sensitive === true ? { sensitive: true } : {}),
  };
}

/** Asks the host on one of its request subjects; an error or a silence is said, not thrown. */
async function ask(nc: NatsConnection, subject: string, timeoutMs: number): Promise<{ ok: true; value: unknown } | { ok: false; error: string }> {
  try {
    const reply = await nc.request(subject, '', { timeout: timeoutMs });
    const value = JSON.parse(new TextDecoder().decode(reply.data)) as { error?: unknown };
    if (typeof value === 'object' && value !== null && typeof value.error === 'string' && Object.keys(value).length === 1) return { ok: false, error: value.error };
    return { ok: true, value };
  } catch (err) {
    const { errors } = await lazy(import('@nats-io/transport-node'));
    if (err instanceof errors.TimeoutError) return { ok: false, error: `no answer within ${timeoutMs / 1000} s` };
    if (err instanceof errors.NoRespondersError || (err as Error).cause instanceof errors.NoRespondersError) return { ok: false, error: 'the host is not listening (not connected)' };
    return { ok: false, error: (err as Error).message };
  }
}

export async function askStatus(nc: NatsConnection, node: string): Promise<StatusAnswer> {
  const answer = await ask(nc, statusSubject(node), 3000);
  return answer.ok ? { ok: true, status: answer.value as Extract<StatusAnswer, { ok: true }>['status'] } : answer;
}

export async function askInventory(nc: NatsConnection, node: string): Promise<InventoryAnswer> {
  const answer = await ask(nc, inventorySubject(node), 20_000);
  return answer.ok ? { ok: true, inventory: answer.value } : answer;
}
