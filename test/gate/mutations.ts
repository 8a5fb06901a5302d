import fc from 'fast-check';
import type { KeyObject } from 'node:crypto';
import { signEd25519 } from '../../src/core/declaration/nkey.js';
import type { RefusalKind } from '../../src/core/system/errors.js';

/**
 * Invalid inputs made from valid ones, each invalid by construction: a mutation is chosen so that no
 * value it can give is a declaration (or envelope, or bundle) the host may apply. Each carries its name
 * and what it did, so a failure says which input got through, and the kinds of refusal it must meet:
 * a refusal of another kind is a gate that refused for the wrong reason.
 */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export interface Mutated {
  /** What was done, for the failure message. */
  what: string;
  value: JsonObject;
  /** The refusal kinds this input must meet (more than one only where the gate may fairly see either). */
  kinds: readonly RefusalKind[];
}

/** Which kinds a defect at a place must be refused as: outside the vocabulary, unless said otherwise. */
export type KindsAt = (place: Array<string | number>) => readonly RefusalKind[];
const INVALID: readonly RefusalKind[] = ['invalid'];
const invalidAnywhere: KindsAt = () => INVALID;
const FORGED: readonly RefusalKind[] = ['forged'];

const clone = <T>(v: T): T => structuredClone(v);

/** Every place inside a value, as a list of keys from the top (the top itself excluded). */
function placesIn(value: Json, at: Array<string | number> = []): Array<Array<string | number>> {
  const out: Array<Array<string | number>> = [];
  if (Array.isArray(value)) value.forEach((v, i) => out.push([...at, i], ...placesIn(v, [...at, i])));
  else if (value !== null && typeof value === 'object') for (const [k, v] of Object.entries(value)) out.push([...at, k], ...placesIn(v, [...at, k]));
  return out;
}

const kindOf = (v: Json): string => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);

function at(value: Json, place: Array<string | number>): Json {
  return place.reduce<Json>((v, k) => (v as Record<string | number, Json>)[k]!, value);
}
function setAt(value: JsonObject, place: Array<string | number>, to: Json | undefined): void {
  const parent = at(value, place.slice(0, -1)) as Record<string | number, Json>;
  const key = place.at(-1)!;
  if (to === undefined) {
    if (Array.isArray(parent)) parent.splice(key as number, 1);
    else delete parent[key];
  } else parent[key] = to;
}
const show = (place: Array<string | number>) => `/${place.join('/')}`;

/** A JSON value of any kind, small. */
const anyJson: fc.Arbitrary<Json> = fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<Json>;

/** Any field's value replaced by one of another JSON kind: every field of the vocabulary has exactly one kind. */
export function wrongType(base: JsonObject, kindsAt: KindsAt = invalidAnywhere): fc.Arbitrary<Mutated> {
  const places = placesIn(base);
  return fc.tuple(fc.constantFrom(...places), anyJson).filter(([place, v]) => kindOf(v) !== kindOf(at(base, place))).map(([place, v]) => {
    const value = clone(base);
    setAt(value, place, v);
    return { what: `wrong type at ${show(place)}: ${JSON.stringify(v)}`.slice(0, 300), value, kinds: kindsAt(place) };
  });
}

/** A field the vocabulary does not have, added to any object of it. */
export function unknownField(base: JsonObject, known: ReadonlySet<string>): fc.Arbitrary<Mutated> {
  const objects = [[], ...placesIn(base).filter((p) => kindOf(at(base, p)) === 'object')];
  return fc.tuple(fc.constantFrom(...objects), fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom('__proto__', 'constructor', 'toString', 'Type', 'ID', 'Path ', 'resources ')), anyJson)
    .filter(([, name]) => !known.has(name))
    .map(([place, name, v]) => {
      const value = clone(base);
      // Defined as an own field, as JSON.parse would make it (an assignment to __proto__ would not).
      Object.defineProperty(at(value, place) as object, name, { value: v, enumerable: true, writable: true, configurable: true });
      return { what: `unknown field ${JSON.stringify(name)} at ${show(place)}`, value: JSON.parse(JSON.stringify(value)) as JsonObject, kinds: INVALID };
    });
}

/** A required field taken away. */
export function missingField(base: JsonObject, required: (place: Array<string | number>) => boolean): fc.Arbitrary<Mutated> {
  const places = placesIn(base).filter(required);
  return fc.constantFrom(...places).map((place) => {
    const value = clone(base);
    setAt(value, place, undefined);
    return { what: `missing ${show(place)}`, value, kinds: INVALID };
  });
}

/** A path that is not absolute and normal: relative, '.', '..', doubled or trailing slashes, a NUL, the root, empty. */
export const badPath: fc.Arbitrary<string> = fc.tuple(
  fc.array(fc.stringMatching(/^[a-z0-9._-]{1,8}$/), { minLength: 1, maxLength: 4 }),
  fc.constantFrom('relative', 'dot', 'dotdot', 'double', 'trailing', 'nul', 'root', 'empty', 'dot-end', 'dotdot-end'),
  fc.nat(),
).map(([parts, how, n]) => {
  const i = n % (parts.length + 1);
  const insert = (s: string) => `/${[...parts.slice(0, i), s, ...parts.slice(i)].join('/')}`;
  switch (how) {
    case 'relative': return parts.join('/');
    case 'dot': return insert('.');
    case 'dotdot': return insert('..');
    case 'double': return `/${parts.join('//')}${parts.length === 1 ? '//x' : ''}`;
    case 'trailing': return `/${parts.join('/')}/`;
    case 'nul': return `/${parts.join('/')}\0x`;
    case 'root': return '/';
    case 'empty': return '';
    case 'dot-end': return `/${parts.join('/')}/.`;
    default: return `/${parts.join('/')}/..`;
  }
});

export function withBadPath(base: JsonObject): fc.Arbitrary<Mutated> {
  const withPath = (base.resources as JsonObject[]).flatMap((r, i) => (typeof r.path === 'string' ? [i] : []));
  return fc.tuple(fc.constantFrom(...withPath), badPath).map(([i, path]) => {
    const value = clone(base);
    ((value.resources as JsonObject[])[i]!).path = path;
    return { what: `bad path at /resources/${i}/path: ${JSON.stringify(path)}`, value, kinds: INVALID };
  });
}

/** One resource given another's id (or, for two with paths, another's path). */
export function duplicate(base: JsonObject): fc.Arbitrary<Mutated> {
  const n = (base.resources as JsonObject[]).length;
  return fc.tuple(fc.nat(n - 1), fc.nat(n - 2), fc.constantFrom('id', 'path')).map(([i, k, field]) => {
    const j = (i + 1 + k) % n;
    const value = clone(base);
    const resources = value.resources as JsonObject[];
    const f = field === 'path' && typeof resources[i]!.path === 'string' && typeof resources[j]!.path === 'string' ? 'path' : 'id';
    resources[j]![f] = resources[i]![f]!;
    return { what: `duplicate ${f}: /resources/${j} takes /resources/${i}'s`, value, kinds: INVALID };
  });
}

/** A string that is not canonical base64: a character outside the alphabet, a padding in the middle, a cut. */
export function brokenBase64(valid: string): fc.Arbitrary<string> {
  return fc.tuple(fc.constantFrom('char', 'pad', 'cut', 'space', 'url'), fc.nat(), fc.constantFrom('!', '*', '\n', '"', '.', '~', 'é', '%')).map(([how, n, c]) => {
    const i = n % (valid.length + 1);
    switch (how) {
      case 'char': return valid.slice(0, i) + c + valid.slice(i);
      case 'pad': return `${valid.slice(0, Math.min(i, valid.length - 1))}=${valid.slice(Math.min(i, valid.length - 1))}A`;
      case 'space': return `${valid.slice(0, i)} ${valid.slice(i)}`;
      case 'url': return `${valid}-_`;
      default: return valid.slice(0, valid.length - 1 - (n % 2));
    }
  }).filter((s) => !/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(s));
}

/** A file's base64 content broken. */
export function withBrokenContent(base: JsonObject): fc.Arbitrary<Mutated> {
  const encoded = (base.resources as JsonObject[]).flatMap((r, i) => (r.encoding === 'base64' ? [i] : []));
  return fc.constantFrom(...encoded).chain((i) => brokenBase64(((base.resources as JsonObject[])[i]!).content as string).map((content) => {
    const value = clone(base);
    ((value.resources as JsonObject[])[i]!).content = content;
    return { what: `broken base64 content at /resources/${i}: ${JSON.stringify(content)}`, value, kinds: INVALID };
  }));
}

/** A field of the vocabulary given a value of the right kind that it does not take (a pattern, an enum, a bound). */
export function outOfRange(base: JsonObject): fc.Arbitrary<Mutated> {
  const choices: Array<[Array<string | number>, fc.Arbitrary<Json>]> = [
    [['version'], fc.integer().filter((n) => n !== 1)],
    [['mode'], fc.string({ maxLength: 10 }).filter((s) => s !== 'adopted' && s !== 'converged')],
    [['sequence'], fc.oneof(fc.integer({ max: -1 }), fc.double({ noNaN: true, noDefaultInfinity: true }).filter((d) => !Number.isInteger(d)))],
    [['node'], fc.string({ maxLength: 70 }).filter((s) => !/^[A-Za-z0-9_-]{1,64}$/.test(s))],
  ];
  (base.resources as JsonObject[]).forEach((r, i) => {
    choices.push([['resources', i, 'id'], fc.string({ maxLength: 140 }).filter((s) => !/^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/.test(s))]);
    choices.push([['resources', i, 'type'], fc.string({ maxLength: 10 }).filter((s) => !['directory', 'file', 'archive', 'service'].includes(s))]);
    if (r.mode !== undefined) choices.push([['resources', i, 'mode'], fc.string({ maxLength: 6 }).filter((s) => !/^[0-7]{3,4}$/.test(s))]);
    if (r.owner !== undefined) choices.push([['resources', i, 'owner'], fc.string({ maxLength: 40 }).filter((s) => !/^([a-z_][a-z0-9_-]{0,31}\$?|[0-9]{1,10})$/.test(s))]);
    if (r.encoding !== undefined) choices.push([['resources', i, 'encoding'], fc.string({ maxLength: 8 }).filter((s) => s !== 'utf8' && s !== 'base64')]);
  });
  return fc.constantFrom(...choices).chain(([place, arb]) => arb.map((v) => {
    const value = clone(base);
    setAt(value, place, v);
    return { what: `out of range at ${show(place)}: ${JSON.stringify(v)}`.slice(0, 300), value, kinds: INVALID };
  }));
}

/** What a declaration mutation can be. */
export function declarationMutations(base: JsonObject, known: ReadonlySet<string>, required: (place: Array<string | number>) => boolean): fc.Arbitrary<Mutated> {
  return fc.oneof(wrongType(base), unknownField(base, known), missingField(base, required), withBadPath(base), duplicate(base), withBrokenContent(base), outOfRange(base));
}

/** Bytes that are not JSON: cut short, or with a stray character. */
export function notJson(text: string): fc.Arbitrary<{ what: string; bytes: Buffer; kinds: readonly RefusalKind[] }> {
  return fc.tuple(fc.nat(), fc.constantFrom('cut', 'stray', 'nul')).map(([n, how]) => {
    const i = 1 + (n % (text.length - 1));
    const out = how === 'cut' ? text.slice(0, i) : how === 'stray' ? `${text.slice(0, i)},}${text.slice(i)}` : `${text.slice(0, i)}\0${text.slice(i)}`;
    return { what: `not JSON (${how} at ${i})`, bytes: Buffer.from(out), kinds: INVALID };
  }).filter(({ bytes }) => {
    try {
      JSON.parse(bytes.toString('utf8'));
      return false;
    } catch {
      return true;
    }
  });
}

/** An envelope of the payload, signed with the key given. */
export function envelopeOf(payload: Buffer, key: { privateKey: KeyObject; publicKey: string }): JsonObject {
  return { payload: payload.toString('base64'), key: key.publicKey, signature: signEd25519(key.privateKey, payload).toString('base64') };
}

/**
 * An envelope whose signature cannot be taken: signed by another key (refused where a key is pinned),
 * a bit of the signature or payload flipped, broken base64 in either, a field missing, added or of
 * another kind. Each is refused as forged, but for one whose fields are not an envelope's: where a
 * plain declaration may come it is read as one and is outside the vocabulary (`notAnEnvelope`
 * 'invalid'); where only a signed envelope will do, it is not signed ('forged').
 */
export function envelopeMutations(envelope: JsonObject, stranger: { privateKey: KeyObject; publicKey: string }, pinned: boolean, notAnEnvelope: RefusalKind): fc.Arbitrary<Mutated> {
  const payload = Buffer.from(envelope.payload as string, 'base64');
  const flip = (b64: string, n: number) => {
    const bytes = Buffer.from(b64, 'base64');
    bytes[n % bytes.length] = bytes[n % bytes.length]! ^ (1 << (n % 8));
    return bytes.toString('base64');
  };
  const arbs: Array<fc.Arbitrary<Mutated>> = [
    fc.nat().map((n) => ({ what: `signature bit ${n % 512} flipped`, value: { ...envelope, signature: flip(envelope.signature as string, n) }, kinds: FORGED })),
    fc.nat().map((n) => ({ what: `payload bit flipped at ${n % payload.length}`, value: { ...envelope, payload: flip(envelope.payload as string, n) }, kinds: FORGED })),
    brokenBase64(envelope.payload as string).map((p) => ({ what: `broken base64 payload ${JSON.stringify(p.slice(-12))}`, value: { ...envelope, payload: p }, kinds: FORGED })),
    brokenBase64(envelope.signature as string).map((s) => ({ what: `broken base64 signature ${JSON.stringify(s.slice(-12))}`, value: { ...envelope, signature: s }, kinds: FORGED })),
    fc.constantFrom('payload', 'key', 'signature').chain((f) => anyJson.filter((v) => typeof v !== 'string').map((v) => ({ what: `envelope ${f} of kind ${kindOf(v)}`, value: { ...envelope, [f]: v }, kinds: FORGED }))),
    fc.constantFrom('payload', 'key', 'signature').map((f) => {
      const value = { ...envelope };
      delete value[f];
      return { what: `envelope without ${f}`, value, kinds: [notAnEnvelope] };
    }),
    fc.string({ maxLength: 8 }).filter((k) => !['payload', 'key', 'signature'].includes(k)).map((k) => ({ what: `envelope with extra field ${JSON.stringify(k)}`, value: JSON.parse(JSON.stringify({ ...envelope, [k]: 1 })) as JsonObject, kinds: [notAnEnvelope] })),
    // Signed by the stranger but naming the pinned key, or the stranger's key with the pinned signature.
    fc.constant({ what: 'signed by another key, naming the pinned one', value: { ...envelopeOf(payload, stranger), key: envelope.key! }, kinds: FORGED }),
    fc.constant({ what: "the pinned signature under another key's name", value: { ...envelope, key: stranger.publicKey }, kinds: FORGED }),
  ];
  if (pinned) arbs.push(fc.constant({ what: 'signed by another key', value: envelopeOf(payload, stranger), kinds: FORGED }));
  return fc.oneof(...arbs);
}
