import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { Page } from 'puppeteer-core';
import { ensureWire } from '../src/link/control.js';
import { CHROMIUM, launchBrowser, type TestBrowser } from '../test/support/browser.js';
import { control } from '../test/support/daemon.js';
import { NatsServer, natsUnavailable } from '../test/support/nats.js';
import { startServe, type Served } from '../test/support/serve.js';
import { SimHosts } from '../test/support/sim-hosts.js';
import { fmt, loadAverage, median, percentile, statusMb } from './stats.js';

const TITLE = "## The fleet page (`meshctl serve`, 1,000 simulated nodes, a real nats-server on loopback, Debian's chromium)";
const NODES = 1000;
const NAVIGATIONS = 7;
const RATE = 200;
const LIVE_SECONDS = 30;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** serve's resident memory, sampled while the bench runs, and its kernel-kept peak (VmHWM). */
class RssWatch {
  readonly samples: Array<{ phase: string; mb: number }> = [];
  private phase = 'start';
  private readonly timer: NodeJS.Timeout;
  constructor(private readonly pid: number) {
    this.timer = setInterval(() => this.sample(), 250);
  }
  enter(phase: string): void {
    this.sample();
    this.phase = phase;
  }
  sample(): void {
    this.samples.push({ phase: this.phase, mb: statusMb(this.pid) });
  }
  max(phase?: string): number {
    return Math.max(...this.samples.filter((s) => phase === undefined || s.phase === phase).map((s) => s.mb));
  }
  peak(): number {
    return Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${this.pid}/status`, 'utf8'))![1]) / 1024;
  }
  stop(): void {
    clearInterval(this.timer);
  }
}

/**
 * From the navigation's start to all 1,000 rows drawn, on the page's own clock: checked every frame,
 * and timed once the frame that holds them has been laid out and painted (the next frame's callback,
 * then a task); and as the driver waited for it.
 */
async function navigate(browser: TestBrowser, url: string): Promise<{ inPage: number; wall: number }> {
  const page = await browser.page();
  await page.evaluateOnNewDocument((n: number) => {
    const look = () => {
      if (document.querySelectorAll('table.fleet tbody tr').length !== n) return requestAnimationFrame(look);
      requestAnimationFrame(() => setTimeout(() => ((window as unknown as { drawnAt: number }).drawnAt = performance.now())));
    };
    requestAnimationFrame(look);
  }, NODES);
  const started = performance.now();
  await page.goto(url, { waitUntil: 'domcontentloaded' });
  const drawn = await page.waitForFunction(() => (window as unknown as { drawnAt?: number }).drawnAt, { timeout: 60_000 });
  const wall = performance.now() - started;
  const inPage = (await drawn.jsonValue()) as number;
  await page.close();
  return { inPage, wall };
}

/** Records, in the page, when each row's report cell changes and what it then says. */
async function watchReportCells(page: Page): Promise<void> {
  await page.evaluate(() => {
    const seen: Array<[string, string, number]> = [];
    (window as unknown as { seen: typeof seen }).seen = seen;
    new MutationObserver((mutations) => {
      const at = Date.now();
      for (const m of mutations) {
        const el = m.target.nodeType === Node.TEXT_NODE ? m.target.parentElement : (m.target as Element);
        const cell = el?.closest('td[data-col="report"]');
        if (cell) seen.push([cell.parentElement!.getAttribute('data-node')!, cell.textContent ?? '', at]);
      }
    }).observe(document.querySelector('table.fleet tbody')!, { subtree: true, characterData: true, childList: true });
  });
}

interface Live {
  sent: number;
  seconds: number;
  lags: number[];
  missing: number;
  /** The page's main thread: the share of the run it was busy (script, style, layout). */
  busy: number;
}

/** `RATE` reports a second for `LIVE_SECONDS`, round the nodes, each timed from its publish to its row showing it. */
async function live(sims: SimHosts, nodes: string[], page: Page): Promise<Live> {
  await watchReportCells(page);
  const sequences = new Map(nodes.map((n) => [n, 1]));
  const published = new Map<string, number>();
  const pending: Array<Promise<number>> = [];
  const before = await page.metrics();
  const start = Date.now();
  const end = start + LIVE_SECONDS * 1000;
  let sent = 0;
  while (Date.now() < end) {
    const due = Math.floor(((Date.now() - start) * RATE) / 1000);
    for (; sent < due; sent++) {
      const node = nodes[sent % nodes.length]!;
      const sequence = sequences.get(node)! + 1;
      sequences.set(node, sequence);
      published.set(`${node}#${sequence}`, Date.now());
      pending.push(sims.report(node));
    }
    await sleep(5);
  }
  const seconds = (Date.now() - start) / 1000;
  await Promise.all(pending);
  // Every row ends on its newest report (a second at most after the last publish, or it is missing).
  await page.waitForFunction((want) => want.every(([node, text]) => document.querySelector(`tr[data-node="${node}"] td[data-col="report"]`)?.textContent === text), { timeout: 10_000 }, [...sequences].map(([n, s]) => [n, `#${s}`])).catch(() => undefined);
  const after = await page.metrics();
  const seen = await page.evaluate(() => (window as unknown as { seen: Array<[string, string, number]> }).seen);
  const firstSeen = new Map<string, number>();
  for (const [node, text, at] of seen) if (!firstSeen.has(`${node}${text}`)) firstSeen.set(`${node}${text}`, at);
  const lags: number[] = [];
  let missing = 0;
  for (const [key, at] of published) {
    const shown = firstSeen.get(key);
    if (shown === undefined) missing++;
    else lags.push(shown - at);
  }
  const busyMs = ((after.TaskDuration ?? 0) - (before.TaskDuration ?? 0)) * 1000;
  return { sent, seconds, lags, missing, busy: busyMs / (seconds * 1000) };
}

/** A nats-server with every node's key, declaration, first report and heartbeat. */
async function scene(): Promise<{ server: NatsServer; sims: SimHosts; nodes: string[]; close: () => Promise<void> }> {
  const server = await NatsServer.start();
  const nc = await control([server.url]);
  await ensureWire(nc);
  const nodes = Array.from({ length: NODES }, (_, i) => `sim-${String(i).padStart(4, '0')}`);
  const roles = ['web', 'db', 'cache', 'queue'];
  const sims = await SimHosts.make(nc, nodes, { labels: (node) => ({ role: roles[Number(node.slice(4)) % roles.length]! }) });
  for (let at = 0; at < nodes.length; at += 25) {
    await Promise.all(nodes.slice(at, at + 25).map((node) => sims.report(node)));
    for (const node of nodes.slice(at, at + 25)) sims.beat(node);
  }
  await nc.flush();
  return {
    server,
    sims,
    nodes,
    close: async () => {
      await nc.close();
      await server.stop();
    },
  };
}

/**
 * The page of 1,000 nodes: from navigation to every row drawn; at `RATE` reports a second, how far the
 * rows fall behind the bus; and `meshctl serve`'s resident memory throughout.
 */
export async function benchPage(): Promise<string[]> {
  const unavailable = natsUnavailable() ?? (spawnSync(CHROMIUM, ['--version']).error ? 'chromium is not installed (scripts/setup.sh)' : undefined);
  if (unavailable) return [TITLE, '', `Not measured: ${unavailable}.`];
  const loadBefore = loadAverage();
  const { server, sims, nodes, close } = await scene();
  let served: Served | undefined;
  let browser: TestBrowser | undefined;
  try {
    served = await startServe(['--server', server.url, '--log-level', 'warn']);
  } catch (err) {
    await close();
    throw err;
  }
  const rss = new RssWatch(served.proc.pid!);
  try {
    await sleep(2000);
    rss.enter('navigations');
    browser = await launchBrowser();
    const navigations: Array<{ inPage: number; wall: number }> = [];
    for (let i = 0; i < NAVIGATIONS; i++) navigations.push(await navigate(browser, served.url));
    rss.enter('live');
    const page = await browser.page();
    await page.goto(served.url);
    await page.waitForFunction((n) => document.querySelectorAll('table.fleet tbody tr').length === n, { timeout: 60_000 }, NODES);
    const run = await live(sims, nodes, page);
    rss.enter('end');
    const version = spawnSync(CHROMIUM, ['--version'], { encoding: 'utf8' }).stdout.trim();
    return section({ navigations, run, rss, version, load: { before: loadBefore, after: loadAverage() } });
  } finally {
    rss.stop();
    await browser?.close();
    await served.stop();
    await close();
  }
}

function section(f: { navigations: Array<{ inPage: number; wall: number }>; run: Live; rss: RssWatch; version: string; load: { before: string; after: string } }): string[] {
  const inPage = f.navigations.map((n) => n.inPage);
  const wall = f.navigations.map((n) => n.wall);
  const lag = (p: number) => fmt(percentile(f.run.lags, p));
  const rate = f.run.sent / f.run.seconds;
  const maxLag = Math.max(...f.run.lags);
  const rssMax = Math.max(f.rss.max(), f.rss.peak());
  const met = (ok: boolean) => (ok ? 'met on this run' : 'NOT met on this run');
  return [
    TITLE,
    '',
    `${NODES} nodes, each with its own key pinned in the enrolments, a signed declaration, one signed report and a heartbeat; \`meshctl serve\``,
    `as a process on its own port, the page in ${f.version} (headless, 1280×800) on the same machine. Load average before and after: ${f.load.before} / ${f.load.after} (2 cores).`,
    '',
    '| measure | figure | target |',
    '| --- | ---: | ---: |',
    `| navigation to all ${NODES} rows drawn and painted, the page's clock (median / worst of ${NAVIGATIONS}) | ${fmt(median(inPage))} ms / ${fmt(Math.max(...inPage))} ms | under 1 s |`,
    `| the same, as the driver waited for it | ${fmt(median(wall))} ms / ${fmt(Math.max(...wall))} ms | — |`,
    `| reports published, ${f.run.seconds.toFixed(0)} s round the nodes | ${f.run.sent} (${rate.toFixed(0)} a second) | ${RATE} a second |`,
    `| publish to its row showing it: median / p99 / worst | ${lag(50)} ms / ${lag(99)} ms / ${fmt(maxLag)} ms | under 1 s |`,
    `| reports never shown in their row | ${f.run.missing} | 0 |`,
    `| the page's main thread busy while they came | ${(f.run.busy * 100).toFixed(0)} % | — |`,
    `| serve's RSS: after reading the fleet / while pages load / during the reports | ${f.rss.max('start').toFixed(0)} MB / ${f.rss.max('navigations').toFixed(0)} MB / ${f.rss.max('live').toFixed(0)} MB | under 100 MB |`,
    `| serve's peak RSS (VmHWM) | ${f.rss.peak().toFixed(0)} MB | under 100 MB |`,
    '',
    `- **The page of ${NODES} nodes is drawn ${fmt(median(inPage))} ms after navigation** (worst ${fmt(Math.max(...inPage))} ms; target under 1 s: the median ${median(inPage) < 1000 ? 'meets' : 'misses'} it on this run, the worst ${Math.max(...inPage) < 1000 ? 'meets' : 'misses'} it): the shell, the bundled script, the event stream's snapshot of every row, one render.`,
    `- **At ${rate.toFixed(0)} reports a second, a row shows its report ${lag(50)} ms after it was published** (p99 ${lag(99)} ms, worst ${fmt(maxLag)} ms; target under 1 s; ${met(maxLag < 1000 && f.run.missing === 0)}). The server sends changed rows every 100 ms and the page draws once a frame, so half of that is the batching by design.`,
    `- **serve's resident memory stays at ${rssMax.toFixed(0)} MB at most** (target under 100 MB; ${met(rssMax < 100)}), sampled every 250 ms and the kernel's own peak.`,
  ];
}
