import { CurveSender, isSealed, type SealedValue } from '../../core/declaration/sealed.js';
import { refused } from '../../core/system/errors.js';
import type { Enrolments } from '../../link/enrolment.js';
import type { NodeRecord } from './numbering.js';

/** One sensitive value of a declaration: where it is, and how to read and replace it. */
interface SensitiveValue {
  /** The resource's id, and what of it: `content`, or `env NAME`. */
  resource: string;
  what: string;
  /** JSON pointer, for messages. */
  path: string;
  value: string | SealedValue;
  /** The bytes a plain value stands for (a file's content decoded as its encoding says). */
  bytes: () => Buffer;
  /** Puts the sealed value in its place (and drops what no longer applies, a file's encoding). */
  put: (sealed: SealedValue) => void;
}

type Fields = Record<string, unknown>;

/** Where the curve key of a node comes from: its enrolment (and its latest report), or the seed a bundle carries. */
export type CurveKeyOf = (node: string, record: NodeRecord) => Promise<string | undefined>;

/** The node's curve key as its enrolment records it, or as its latest report claims it (recorded then): the enrolments are opened only when asked. */
export const enrolledCurveKeys =
  (enrolments: () => Promise<Enrolments>): CurveKeyOf =>
  async (node, record) =>
    (await enrolments()).sealingKeyOf(node, record.sealing);
type Res = Record<string, unknown>;

/**
 * Every value the declaration marks sensitive, in a copy of it that can be changed without touching the
 * given one: a file's content with `"sensitive": true`, a container's env named in `sensitiveEnv`.
 */
function sensitiveValues(fields: Fields): { copy: Fields; values: SensitiveValue[] } {
  const resources = Array.isArray(fields.resources) ? (fields.resources as unknown[]) : [];
  const values: SensitiveValue[] = [];
  const copied = resources.map((given, i) => {
    if (typeof given !== 'object' || given === null) return given;
    const r = given as Res;
    const id = String(r.id);
    if (r.type === 'file' && r.sensitive === true && (typeof r.content === 'string' || isSealed(r.content))) {
      const copy: Res = { ...r };
      values.push({
        resource: id,
        what: 'content',
        path: `/resources/${i}/content`,
        value: r.content as string | SealedValue,
        bytes: () => Buffer.from(r.content as string, r.encoding === 'base64' ? 'base64' : 'utf8'),
        put: (sealed) => {
          copy.content = sealed;
          delete copy.encoding;
        },
      });
      return copy;
    }
    if (r.type === 'container' && Array.isArray(r.sensitiveEnv) && typeof r.env === 'object' && r.env !== null) {
      const env = { ...(r.env as Record<string, unknown>) };
      const copy: Res = { ...r, env };
      for (const name of r.sensitiveEnv as unknown[]) {
        const value = typeof name === 'string' && Object.hasOwn(env, name) ? env[name] : undefined;
        if (typeof value !== 'string' && !isSealed(value)) continue;
        values.push({ resource: id, what: `env ${String(name)}`, path: `/resources/${i}/env/${String(name)}`, value, bytes: () => Buffer.from(value as string, 'utf8'), put: (sealed) => (env[name as string] = sealed) });
      }
      return copy;
    }
    return given;
  });
  return { copy: { ...fields, resources: copied }, values };
}

/** A resource of a declaration by id, for finding what the node's key holds of each value. */
function heldValue(held: Fields | undefined, v: SensitiveValue): unknown {
  const resources = Array.isArray(held?.resources) ? (held.resources as Res[]) : [];
  const r = resources.find((x) => x && x.id === v.resource);
  if (!r) return undefined;
  return v.what === 'content' ? r.content : (r.env as Record<string, unknown> | undefined)?.[v.what.slice('env '.length)];
}

/**
 * Seals every sensitive value of a declaration to the curve key of the node it is for, before it is
 * signed; the operator's file is never changed. meshctl's own curve key (derived from the operator's
 * seed) is the sender, so meshctl can open what it sealed: to seal it again for a host whose key
 * changed, to keep a rollout's declaration with no value in the clear, and to see that a node's key
 * already holds a value (its box is reused, and an unchanged declaration is still "unchanged").
 */
export class Sealer {
  readonly sender: CurveSender;

  /** `keyOf` is asked for only when a declaration has a value to seal. */
  constructor(operatorSeed: string, private readonly keyOf: CurveKeyOf) {
    this.sender = new CurveSender(operatorSeed);
  }

  /**
   * The node's copy with its values sealed to the node's curve key (the same object when it has none to
   * seal). Refused, naming the resource, when the node has no curve key recorded, or a value was sealed
   * by another sender (meshctl cannot open it to seal it for this node).
   */
  async sealFor(fields: Fields, node: string, record: NodeRecord = {}): Promise<Fields> {
    const { copy, values } = sensitiveValues(fields);
    if (values.length === 0) return fields;
    const to = await this.keyOf(node, record);
    if (to === undefined) {
      throw refused(`${node} has no curve key recorded, so ${values[0]!.resource} (${values[0]!.what}) cannot be sealed to it; nothing was sent`, [
        'a host records its curve key with its first report from a version that seals (start it, or wait for its next report); meshctl node-key records one for a host not made yet',
      ]);
    }
    for (const v of values) {
      const plain = this.plainOf(v, node);
      const held = heldValue(record.key?.declaration, v);
      // The value the key holds already, sealed to this node's current key: kept, so nothing changes.
      if (isSealed(held) && held.to === to && this.sender.openOwn(held)?.equals(plain)) v.put(held);
      else v.put(this.sender.seal(plain, to)!);
    }
    return copy;
  }

  /**
   * The declaration as a rollout keeps it: every sensitive value sealed to meshctl's own curve key, so
   * the rollout's record holds none in the clear and a resumed rollout (given the same --key) can open
   * them to seal each node's copy.
   */
  sealForRecord(fields: Fields): Fields {
    const { copy, values } = sensitiveValues(fields);
    for (const v of values) {
      v.put(this.sender.seal(this.plainOf(v, 'the rollout record'), this.sender.publicKey)!);
    }
    return values.length === 0 ? fields : copy;
  }

  /** The plain bytes of a value: given plain, or sealed by this sender (to any key); one sealed by another sender is refused, named. */
  private plainOf(v: SensitiveValue, node: string): Buffer {
    if (!isSealed(v.value)) return v.bytes();
    const opened = this.sender.openOwn(v.value);
    if (opened) return opened;
    throw refused(`${v.path} (${v.resource}, ${v.what}) is sealed by another key (${v.value.from}) than this operator key's: it cannot be sealed for ${node}; give the value plain in the file (it is sealed before it is sent)`);
  }
}
