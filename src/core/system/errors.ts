/** Exit statuses (docs/reference.md, "Exit status"). */
export const EXIT = {
  /** converged, or a dry run that planned */
  ok: 0,
  /** the apply failed; the report names the step */
  failed: 1,
  /** usage */
  usage: 2,
  /** refused before anything was touched */
  refused: 3,
  /** cannot start (store unreadable) */
  cannotStart: 4,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/**
 * Why something was refused, named where it is refused: the store counts refusals by it and reports
 * carry it, so nothing downstream has to guess from the message.
 */
export type RefusalKind =
  /** a signature that does not verify, or no key pinned to verify it with */
  | 'forged'
  /** signed only by a control key a newer trust version retired */
  | 'retired'
  /** signed by fewer distinct control keys than the trust root's threshold (awaiting approval) */
  | 'unapproved'
  /** declared for another node */
  | 'wrong-node'
  /** outside the vocabulary: not JSON, over the bound, a bad field or path */
  | 'invalid'
  /** older than what this host applied, kept or holds pending, or the same order with another digest */
  | 'stale'
  /** the other mode, on a path that may not change it */
  | 'mode'
  /** a resource type this host has no handler for */
  | 'unsupported'
  /** the plan cannot be applied as the machine stands (or its service manager is missing) */
  | 'unappliable'
  /** the act does not fit where the host is (genesis over, not enrolled, a kept file changed) */
  | 'state';

/**
 * What a refusal names, as data and whole: the entry of an archive, a link's text. A message shows such
 * values cut when they are long; a JSON report carries them here as they are.
 */
export interface Subject {
  /** The resource whose step was refused, when one was. */
  resource?: string;
  /** The refusal's own kind (an archive's: 'link-entry', 'not-local', ...). */
  kind: string;
  entry?: string;
  link?: string;
}

/** What an error names as data, when it carries a subject (an archive's refusal does). */
export function subjectOf(err: unknown): Subject | undefined {
  const subject = err instanceof Error ? (err as { subject?: unknown }).subject : undefined;
  return typeof subject === 'object' && subject !== null && typeof (subject as Subject).kind === 'string' ? (subject as Subject) : undefined;
}

/** An error that ends a command with a given status and a message an operator can act on. */
export class HostError extends Error {
  constructor(
    readonly exitCode: ExitCode,
    message: string,
    readonly details: string[] = [],
    /** Set on refusals (exit 3): why, as data. */
    readonly kind?: RefusalKind,
    /** What the refusal names, whole. */
    readonly subjects: Subject[] = [],
  ) {
    super(message);
    this.name = 'HostError';
  }
}

/** Refused before anything on the machine was touched (exit 3). */
export function refused(message: string, details: string[] = [], kind: RefusalKind = 'invalid', subjects: Subject[] = []): HostError {
  return new HostError(EXIT.refused, message, details, kind, subjects);
}

/** The host cannot start (exit 4). */
export function cannotStart(message: string, details: string[] = []): HostError {
  return new HostError(EXIT.cannotStart, message, details);
}

export function usageError(message: string): HostError {
  return new HostError(EXIT.usage, message);
}

/**
 * What the system said when a write failed, as data: its errno code (`ENOSPC`, `EIO`, `EROFS`) and the
 * declared path it was writing. A report carries it so that the fleet tells a full disk from a failing
 * one without reading the message.
 */
export interface Fault {
  code: string;
  path?: string;
}

/** The codes that mean the disk has no room left: blocks or inodes (ENOSPC), or the user's quota (EDQUOT). */
export const DISK_FULL_CODES: readonly string[] = ['ENOSPC', 'EDQUOT'];

export const isDiskFull = (fault: Pick<Fault, 'code'> | undefined | null): boolean => fault !== undefined && fault !== null && DISK_FULL_CODES.includes(fault.code);

/** An error that names its errno code and the declared path it was about. */
export class FaultError extends Error {
  constructor(message: string, readonly fault: Fault) {
    super(message);
    this.name = 'FaultError';
  }
}

/** The fault an error carries: ours (a FaultError), or a system call's errno code alone (its path is the rooted one, not the declared). */
export function faultOf(err: unknown): Fault | undefined {
  if (err instanceof FaultError) return err.fault;
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === 'string' && /^E[A-Z0-9]+$/.test(code) ? { code } : undefined;
}
