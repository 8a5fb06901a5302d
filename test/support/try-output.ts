import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectDir } from './cli.js';

/**
 * What `bash scripts/try.sh` must print, checked against README.md as it is at run time: the suite's own
 * run of the script and the newcomer's run on a fresh machine both hold it to the same lines.
 */

/** What differs from one run to the next: the scratch folder, the port, the key, times, ages, the declaration's and the archive's digests. */
function normalized(line: string): string {
  return line
    .replace(/\/tmp\/mesh-host-try\.[A-Za-z0-9]+/g, '<scratch>')
    .replace(/127\.0\.0\.1:\d+/g, '127.0.0.1:<port>')
    .replace(/public key [A-Z2-7]{56}/g, 'public key <key>')
    .replace(/signed by [A-Z2-7]{8}…[A-Z2-7]{4}/g, 'signed by <key>')
    .replace(/unpack [0-9a-f]{12}\b/g, 'unpack <digest>')
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, '<time>')
    .replace(/sha256:[0-9a-f]{64}/g, 'sha256:<digest>')
    .replace(/\b\d+(\.\d+)?(ms|s|m|h) ago\b/g, '<age> ago')
    .replace(/\s+/g, ' ')
    .trim()
    // The fleet view's last column: whether the first heartbeat has come yet is a matter of timing.
    .replace(/^(example \S+ converged .*) (never|<age> ago)$/, '$1 <heartbeat>');
}

/** The output README.md shows under its first command. */
function readmeOutput(readme: string): string[] {
  const block = /```sh\nbash scripts\/try\.sh\n```[\s\S]*?```text\n([\s\S]*?)\n```/.exec(readme);
  if (!block) throw new Error("README.md shows no output of scripts/try.sh (a ```text block after its first command)");
  return block[1]!.split('\n');
}

/** README's lines that hold on every machine: the inventory's headings, then every line from the nats-server on. */
function checkedLines(shown: string[]): string[] {
  const mesh = shown.findIndex((l) => l.startsWith('== a nats-server'));
  return [...shown.slice(0, mesh).filter((l) => /^(== |[a-z ]+:$)/.test(l)), ...shown.slice(mesh)].filter((l) => l !== '…');
}

/** What the run must show whatever README says: the loop went round (genesis, the change with its archive, the no-op, the host up). */
const LOOP: Array<[string, RegExp]> = [
  ['the genesis report', /report 1: genesis converged/],
  ['the delivery that unpacked the archive', /report 2: delivery converged \(.*done\), declaration sequence 2\n( {2}done .*\n)* {2}done +create \/srv\/site: .*\[archive site-1\]/],
  ['the same declaration again, every step unchanged', /report 3: delivery converged \(\d+ unchanged\)/],
  ["the host's history, each declaration converged", /^sequence 2 .* converged \(report 2\) +signed by .*\+site-1$/m],
  ['the unpacked archive', /\.\/index\.html: <h1>Served from an archive the mesh unpacked\.<\/h1>/],
  ["the host's link up in its status", /"link": "up"/],
  ['the fleet view, with the labels', /^example +role=web,site=a +converged +converged /m],
  ["the fleet page's address, and its events answering with the host", /^open http:\/\/127\.0\.0\.1:\d+\/ in a browser[^\n]*\nits events \(200\): example converged$/m],
  ['the scratch folder it leaves', /scratch left in \/tmp\/mesh-host-try\.[A-Za-z0-9]+/],
];

/**
 * Everything wrong with what try.sh printed (empty when it is right): a step of the loop it did not show,
 * or the first line README.md shows under the command that it did not print, in README's order.
 * `readme` is README.md's text; the project's own by default.
 */
export function tryOutputProblems(stdout: string, readme = readFileSync(join(projectDir, 'README.md'), 'utf8')): string[] {
  const problems = LOOP.filter(([, pattern]) => !pattern.test(stdout)).map(([what]) => `it did not show ${what}`);
  const printed = stdout.split('\n').map(normalized);
  let at = 0;
  for (const line of checkedLines(readmeOutput(readme))) {
    const found = printed.indexOf(normalized(line), at);
    if (found < 0) {
      problems.push(`README.md shows a line scripts/try.sh did not print (after its line ${at}): ${line}`);
      break;
    }
    at = found + 1;
  }
  return problems;
}

/** The scratch folder a run of try.sh names at its end, left for a look. */
export function tryScratch(stdout: string): string | undefined {
  return /scratch left in (\/tmp\/mesh-host-try\.[A-Za-z0-9]+)/.exec(stdout)?.[1];
}
