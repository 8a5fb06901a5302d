import { basename } from 'node:path';

export type ProgramName = 'mesh-host' | 'meshctl';

/** `mesh-host ctl ARGS…` runs meshctl ARGS…: the release's one executable carries both programs. */
export const CTL_COMMAND = 'ctl';

/**
 * Which program a release's executable runs: meshctl when it is run by that name (the link
 * `meshctl -> mesh-host` the installer and the packages make) or as `mesh-host ctl …`; mesh-host
 * otherwise. `argv0` is the name it was run as, before the kernel resolved any link.
 */
export function chooseProgram(argv0: string, args: readonly string[]): { program: ProgramName; args: readonly string[] } {
  if (basename(argv0) === 'meshctl') return { program: 'meshctl', args };
  if (args[0] === CTL_COMMAND) return { program: 'meshctl', args: args.slice(1) };
  return { program: 'mesh-host', args };
}

/** The release's entry: the chosen program's modules only are evaluated. */
export async function main(argv0: string, args: readonly string[]): Promise<number> {
  const chosen = chooseProgram(argv0, args);
  const program = chosen.program === 'meshctl' ? await import('./meshctl.js') : await import('./mesh-host.js');
  return program.main(chosen.args);
}
