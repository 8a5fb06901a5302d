import type { Problem } from './problem.js';

/**
 * What a declaration may say of one kind of resource, and the rules it keeps, as data: the kind's own
 * folder (src/kinds/KIND/KIND-spec.ts) holds it, and the registry of kinds (src/kinds/kind-specs.ts)
 * lists it. The validation and the words of a report read it from there; the kind's code (its handler)
 * is listed apart, in src/kinds/kind-handlers.ts, and its schema apart again, in KIND-schema.ts beside
 * it (listed in src/kinds/kind-schemas.ts): a spec holds no schema object, so that what reads the specs
 * (every apply, the daemon) never loads the schema's library.
 */
export interface KindSpec<Res extends { type: string } = { type: string }, C extends { kind: string } = never, R extends object = object> {
  /** The kind's `type`: the literal its schema's `type` is. */
  type: Res['type'];
  /**
   * The field that says where a resource of this kind sits, declared once in a declaration: its name,
   * the words a second one is refused with, and the space it is unique in (paths are one space for every
   * kind that sits at a path; units, container names, user names each another).
   */
  place: { field: string; what: string; space: string };
  /**
   * A kind whose place is a path on the machine: a declared directory above it comes first, and
   * nothing is declared below one that `holdsTree` (an archive owns what it unpacks).
   */
  atPath?: { holdsTree?: true };
  /** What the schema cannot say (a container's image digest, a lock's path): problems at `at`. */
  rules?(resource: Res, at: string): Problem[];
  /** Fields that name other resources by id, and the kinds they may name (a service's restartOn: files or archives). */
  refers?: ReadonlyArray<{ field: string; to: readonly string[] }>;
  /** The words of the changes only this kind makes (`C`): a report says each change through them. */
  words?: WordsOf<C>;
  /** Never set: names the type of the kind's resource as its schema says it (`Res`, the schema's Static type). */
  readonly resource?: Res;
  /** Never set: names the type of what the store keeps of this kind beyond every record's fields (`R`). */
  readonly kept?: R;
  /** Never set: names the type of the changes only this kind makes (`C`). */
  readonly changes?: C;
}

/** A change's words, one function a change kind: a kind's spec gives them for the changes only it makes. */
export type WordsOf<C extends { kind: string }> = { [K in C['kind']]: (change: Extract<C, { kind: K }>) => string };

/**
 * Says a kind's spec with the types of its resource `Res` (its schema's Static type, imported as a type
 * alone), of its own changes `C` and of what the store keeps of it `R` (the registry's types read them):
 * `kindSpec<FileResource, FileChange, FileKept>({…})`.
 */
export const kindSpec = <Res extends { type: string }, C extends { kind: string } = never, R extends object = object>(spec: KindSpec<Res, C, R>): KindSpec<Res, C, R> => spec;
