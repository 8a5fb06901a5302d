/** Exit statuses (README.md, "Exit status"). */
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

/** An error that ends a command with a given status and a message an operator can act on. */
export class HostError extends Error {
  constructor(
    readonly exitCode: ExitCode,
    message: string,
    readonly details: string[] = [],
  ) {
    super(message);
    this.name = 'HostError';
  }
}

/** Refused before anything on the machine was touched (exit 3). */
export function refused(message: string, details: string[] = []): HostError {
  return new HostError(EXIT.refused, message, details);
}

/** The host cannot start (exit 4). */
export function cannotStart(message: string, details: string[] = []): HostError {
  return new HostError(EXIT.cannotStart, message, details);
}

export function usageError(message: string): HostError {
  return new HostError(EXIT.usage, message);
}
