// Writes docs/lifecycle.md (a Mermaid block) and docs/lifecycle.svg (Graphviz) from the lifecycle
// machine itself, through `mesh-host chart`. CI runs this and fails when the committed files differ.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';

const chart = (format) => execFileSync(process.execPath, ['bin/mesh-host', 'chart', '--format', format], { encoding: 'utf8' });
const mermaid = chart('mermaid').trimEnd();
const json = JSON.parse(chart('json'));
writeFileSync('docs/lifecycle.svg', execFileSync('dot', ['-Tsvg'], { input: chart('dot'), encoding: 'utf8' }));

const doc = `# The lifecycle

Generated from \`machines/lifecycle.ts\` by \`npm run chart\` (\`mesh-host chart\`): do not edit by hand.
The machine has ${json.states.length} state nodes and ${json.transitions.length} transitions; the model-based tests
(\`test/lifecycle/\`) take every one of them.

![the lifecycle](lifecycle.svg)

## Reading it

- **starting** loads the store under the lock (leftover temporary saves are removed and counted), with
  the last applied and the kept declaration. An enrolled machine goes on to **serving**; one that is not
  goes to **unenrolled**. Started with \`--bundle FILE --mode M\`, it enrols itself once through the one
  genesis path (**genesis**), then starts again; without a bundle, or after a refused one, it waits,
  looking again every few seconds, until \`mesh-host genesis\` has enrolled it. A store that cannot be
  read stops the host. A start whose store says the last apply failed (a genesis whose fault was put
  right since, a disk since freed) asks at once for one reconcile that says why; not just after the
  genesis the host ran itself, whose failure it has just reported.
- **serving** is parallel: its regions run side by side. **mode** follows the recorded mode (adopted or
  converged); **link** is up or down as the connection to the mesh goes; **reconcile** runs the timer,
  which only enqueues; **worker** takes the one pending declaration when it starts, applies it once and
  makes one report; **outbox** sends reports one at a time, oldest first, retrying until acknowledged.
- A delivery is ordered by the machine before anything is touched: one older than the last applied, the
  kept or the pending declaration, or equal in order to one of them with another digest, is refused and
  reported, never kept (with an epoch the order is (epoch, sequence); without one, the sequence alone).
  An accepted delivery is kept (\`declared.json\` always holds the newest accepted) and fills the one
  pending slot; the kept value read again after a restart is not a new delivery.
- A delivery and a reconcile tick never apply anything themselves: they fill the one pending slot
  (newest wins; a tick never displaces a delivery). Only \`worker.applying\` applies.
- The **outbox** region's watch is the one way a report reaches the machine (**REPORT_READY**): what waits
  when serving begins, each report the worker commits (told before the worker ends), and each one a command
  run by hand leaves while the host serves, each told once, oldest first, and sent in that order.
- The **pause** region follows \`mesh-host pause\` and \`resume\` (a watch of the store's head tells it;
  a start reads it from the store). While **paused** (or **pausedUntil**, which ends by itself after
  \`--for\`), the worker takes no apply: deliveries are kept and fill the slot (newest wins), ticks are
  skipped, findings wait, refusals are still reported. A pause that comes while an apply runs lets it end;
  a worker that finds the store paused under the lock gives its work back. On **UNPAUSE**, or at the end,
  what waits is applied at once.
- The **deferral** region watches the locks of steps an apply held off (a service's restart, a
  container's replacement, while the lock the resource names is held by a live process). Each apply says
  what it held off (**DEFERRED**, raised after it: the newest apply decides); a start reads it from the
  store. While **waiting**, the lock watcher only enqueues: **LOCK_RELEASED** (the lock's file gone, or
  its holder dead), or the first bound running out (\`inhibitMaxMs\`), asks for one reconcile that says
  why (a pending delivery does it anyway), and that apply says what still waits.
- **STOP**, **STAND_ASIDE** and **MOVE** all end between applies: an idle worker with refusals waiting
  reports them first (a write of reports, no apply; their reports wait in the outbox for the next start
  if they cannot leave now), then goes to **quiescing**; an applying one goes to \`applying.draining\` and waits for its apply (never cancelled),
  for at most the grace of 60 s. After the grace the host quiesces anyway and *stops*, whatever ending
  was asked: standing aside or moving with an apply still running would let the next apply overlap it.
- **quiescing** lets no save start any more. Then the host is **stopped**, or **standingAside** (the lock
  and the link released; **RESUME** starts it again, re-reading the store), or, after a **MOVE** to
  another bus, **starting** again with every watch and stream reopened.

What ends the daemon: SIGTERM or SIGINT stop it; SIGUSR1 makes it stand aside (for a host on trial) and
SIGUSR2 resumes it; SIGHUP, or an edit of the link settings in the configuration, moves it to the bus the
configuration names.

\`\`\`mermaid
${mermaid}
\`\`\`
`;
writeFileSync('docs/lifecycle.md', doc);
