import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Page } from 'puppeteer-core';
import { control } from '../support/daemon.js';
import { useMeshHost } from '../support/mesh.js';
import { SimHosts } from '../support/sim-hosts.js';
import { startServe, type Served } from '../support/serve.js';
import { axeViolations, launchBrowser, screenshot, type TestBrowser } from '../support/browser.js';
import { RolloutStore } from '../../src/control/fleet/rollout-store.js';
import { newNkeySeed } from '../../src/core/declaration/nkey.js';
import { Enrolments } from '../../src/link/enrolment.js';
import { reportSigner, type ReportSigner } from '../../src/link/report-trust.js';
import type { Rollout } from '../../src/control/fleet/rollout.js';

/**
 * The page in Debian's chromium, served by `meshctl serve` (the built program) from a real nats-server,
 * with a real daemon and simulated hosts publishing on the wire as hosts do.
 */
describe('meshctl serve in a browser', () => {
  const mesh = useMeshHost();
  let nc: NatsConnection;
  let sims: SimHosts;
  let served: Served;
  let browser: TestBrowser;
  const SIMS = ['sim-web-1', 'sim-web-2', 'sim-db-1'];

  beforeAll(async () => {
    nc = await control([mesh.server.url]);
    sims = await SimHosts.make(nc, [...SIMS, 'sim-quiet', 'zz-late'], { labels: (node) => ({ role: node.includes('db') ? 'db' : 'web' }) });
    for (const node of SIMS) {
      await sims.report(node);
      sims.beat(node);
    }
    // Enrolled, with a label, and never heard from nor sent anything: the mesh knows it all the same.
    await (await Enrolments.open(nc)).pin('sim-enrolled', (reportSigner(newNkeySeed('node')) as ReportSigner).publicKey, { labels: { role: 'edge' } });
    served = await startServe(['--server', mesh.server.url]);
    browser = await launchBrowser();
  });

  // A browser keeps at most six connections to one server over HTTP/1.1, and each open page holds one
  // for its events: a test's pages are closed after it.
  const pages: Page[] = [];
  afterEach(async () => {
    for (const page of pages.splice(0)) await page.close();
  });

  afterAll(async () => {
    await browser?.close();
    await served?.stop();
    await nc?.close();
  });

  /** Opens a page of the server and waits for its rows (or its node page) to be drawn. */
  async function open(path: string, viewport?: { width: number; height: number }, drawn = path === '/' ? 'table.fleet tbody tr' : '#node-title'): Promise<Page & { requests: string[] }> {
    const page = await browser.page(viewport);
    pages.push(page);
    await page.goto(`${served.url.replace(/\/$/, '')}${path}`);
    await page.waitForSelector(drawn);
    return page;
  }

  const rowState = (page: Page, node: string) => page.$eval(`tr[data-node="${node}"]`, (tr) => tr.getAttribute('data-state'));
  const cellText = (page: Page, node: string, col: string) => page.$eval(`tr[data-node="${node}"] [data-col="${col}"]`, (td) => td.textContent?.trim());

  /** Every request stayed on the server, and the page broke no rule of its Content-Security-Policy. */
  async function expectSelfContained(page: Page & { requests: string[] }): Promise<void> {
    const origin = new URL(served.url).origin;
    expect(page.requests.filter((u) => new URL(u).origin !== origin)).toEqual([]);
    expect(await page.evaluate(() => (window as unknown as { cspViolations: string[] }).cspViolations)).toEqual([]);
  }

  it('lists every node the mesh knows, the real host and the simulated ones, with their columns', async () => {
    const page = await open('/');
    await page.waitForSelector(`tr[data-node="${mesh.host.node}"]`);
    const nodes = await page.$$eval('table.fleet tbody tr', (trs) => trs.map((tr) => tr.getAttribute('data-node')));
    expect(nodes).toEqual(expect.arrayContaining([mesh.host.node, ...SIMS]));
    expect(await page.$$eval('table.fleet thead th', (ths) => ths.map((th) => th.textContent))).toEqual(['Node', 'State', 'Mode', 'Last outcome', 'Applied', 'Newest', 'Report', 'Heartbeat', 'Signature', 'Labels']);
    expect(await rowState(page, 'sim-web-1')).toBe('converged');
    expect(await cellText(page, 'sim-web-1', 'signature')).toBe('verified');
    expect(await cellText(page, 'sim-db-1', 'labels')).toBe('role=db');
    expect(await cellText(page, 'sim-web-1', 'report')).toBe('#1');
    // A node only enrolled has its row, waiting, with its labels, as in meshctl status.
    await page.waitForSelector('tr[data-node="sim-enrolled"]');
    expect(await rowState(page, 'sim-enrolled')).toBe('waiting');
    expect(await cellText(page, 'sim-enrolled', 'labels')).toBe('role=edge');
    expect(await page.$eval('.counts li[data-state="converged"] strong', (s) => Number(s.textContent))).toBeGreaterThanOrEqual(3);
    // The filters: by label, then by text.
    await page.select('.filters select', 'role=db');
    await page.waitForFunction(() => document.querySelectorAll('table.fleet tbody tr').length === 1);
    expect(await page.$eval('table.fleet tbody tr', (tr) => tr.getAttribute('data-node'))).toBe('sim-db-1');
    await page.select('.filters select', '');
    await page.type('.filters input', 'web-2');
    await page.waitForFunction(() => document.querySelectorAll('table.fleet tbody tr').length === 1);
    expect(await page.$eval('table.fleet tbody tr a', (a) => a.getAttribute('href'))).toBe('/node/sim-web-2');
    // Cleared as a user clears it: select the text, then delete it. Setting the field's value from the test
    // fires no input event, and the page's next draw puts the filter's text back into the field.
    await page.$eval('.filters input', (i) => { (i as HTMLInputElement).focus(); (i as HTMLInputElement).select(); });
    await page.keyboard.press('Backspace');
    await page.waitForFunction(() => document.querySelectorAll('table.fleet tbody tr').length > 3);
    await screenshot(page, 'fleet');
    const phone = await open('/', { width: 390, height: 844 });
    await screenshot(phone, 'fleet-phone');
    // A phone's width: no row is wider than the screen (each row is a card).
    expect(await phone.$eval('table.fleet tbody tr', (tr) => tr.getBoundingClientRect().width)).toBeLessThanOrEqual(390);
    await expectSelfContained(page);
    await expectSelfContained(phone);
  });

  it('shows a new report in its row as it is published, with no reload', async () => {
    const page = await open('/');
    await page.evaluate(() => ((window as unknown as { kept: number }).kept = 1));
    const sequence = await sims.report('sim-web-2');
    await page.waitForFunction((s) => document.querySelector('tr[data-node="sim-web-2"] [data-col="report"]')?.textContent === `#${s}`, {}, sequence);
    // The real host: a new declaration is applied and its report reaches the row.
    const before = await cellText(page, mesh.host.node, 'report');
    await mesh.host.put({ epoch: 1, sequence: 2, resources: [{ type: 'directory', id: 'app', path: '/srv/app' }, { type: 'directory', id: 'data', path: '/srv/data' }] });
    await page.waitForFunction((node, was) => document.querySelector(`tr[data-node="${node}"] [data-col="report"]`)?.textContent !== was, { timeout: 30_000 }, mesh.host.node, before);
    expect(await cellText(page, mesh.host.node, 'applied')).toBe('epoch 1, sequence 2');
    expect(await page.evaluate(() => (window as unknown as { kept?: number }).kept)).toBe(1);
  });

  it('puts a node whose report failed first, as soon as the report is published', async () => {
    const page = await open('/');
    expect(await page.$eval('table.fleet tbody tr', (tr) => tr.getAttribute('data-node'))).not.toBe('zz-late');
    await sims.report('zz-late', { outcome: 'failed', error: { resource: 'app', message: 'mkdir /srv/app: permission denied' } });
    await page.waitForFunction(() => document.querySelector('table.fleet tbody tr')?.getAttribute('data-node') === 'zz-late');
    expect(await rowState(page, 'zz-late')).toBe('failed');
    expect(await page.$eval('tr[data-node="zz-late"] .problems', (ul) => ul.textContent)).toContain('failed: app: mkdir /srv/app: permission denied');
    expect(await page.$eval('.counts li[data-state="failed"] strong', (s) => s.textContent)).toBe('1');
  });

  it('shows a node silent once three of its intervals pass with no message at all', async () => {
    await sims.report('sim-quiet');
    sims.beat('sim-quiet', 1000);
    const page = await open('/');
    await page.waitForFunction(() => document.querySelector('tr[data-node="sim-quiet"]')?.getAttribute('data-state') === 'converged');
    // Nothing more is published for it: the server's own clock turns it silent.
    await page.waitForFunction(() => document.querySelector('tr[data-node="sim-quiet"]')?.getAttribute('data-state') === 'silent', { timeout: 15_000 });
    expect(await page.$eval('tr[data-node="sim-quiet"] .problems', (ul) => ul.textContent)).toMatch(/silent: no heartbeat for/);
  });

  it("lights the host's current state on its lifecycle chart and follows it when the host applies", async () => {
    const page = await open(`/node/${mesh.host.node}`);
    const lit = () => page.$eval('.status', (p) => (p.getAttribute('data-lit') ?? '').split(' '));
    await page.waitForFunction(() => (document.querySelector('.status')?.getAttribute('data-lit') ?? '').split(' ').includes('host.serving.mode.converged'), { timeout: 15_000 });
    expect(await lit()).toEqual(expect.arrayContaining(['host.serving', 'host.serving.link.up', 'host.serving.worker.idle']));
    expect(await page.$$eval('.chart g.node.active title', (ts) => ts.map((t) => t.textContent))).toEqual(expect.arrayContaining(['host.serving.mode.converged', 'host.serving.link.up']));
    const reportsBefore = await page.$$eval('ol.reports > li', (lis) => lis.length);
    // The mesh says: adopted. The host applies it, and its mode region moves.
    await mesh.host.put({ epoch: 1, sequence: 3, mode: 'adopted', resources: [{ type: 'directory', id: 'app', path: '/srv/app' }] });
    await page.waitForFunction(() => (document.querySelector('.status')?.getAttribute('data-lit') ?? '').split(' ').includes('host.serving.mode.adopted'), { timeout: 30_000 });
    expect(await page.$$eval('.chart g.node.active title', (ts) => ts.map((t) => t.textContent))).not.toContain('host.serving.mode.converged');
    // Its report came to the list live, newest first; opened, it shows its steps and their typed changes.
    await page.waitForFunction((n) => document.querySelectorAll('ol.reports > li').length > n, {}, reportsBefore);
    const sequences = await page.$$eval('ol.reports > li', (lis) => lis.map((li) => Number(li.getAttribute('data-sequence'))));
    expect(sequences).toEqual([...sequences].sort((a, b) => b - a));
    const withSteps = await page.$$eval('ol.reports > li', (lis) => lis.findIndex((li) => li.querySelector('table.steps')));
    expect(withSteps).toBeGreaterThanOrEqual(0);
    await page.click(`ol.reports > li:nth-child(${withSteps + 1}) summary`);
    expect(await page.$eval(`ol.reports > li:nth-child(${withSteps + 1}) table.steps`, (t) => (t as HTMLElement).offsetHeight)).toBeGreaterThan(0);
    expect(await page.$$eval('ol.reports code.kind', (cs) => cs.map((c) => c.textContent))).toContain('create');
    // The declaration's resources and the inventory the host answered.
    await page.waitForFunction(() => [...document.querySelectorAll('table.resources tbody tr td:nth-child(2)')].map((t) => t.textContent).join() === 'app');
    await page.waitForSelector('pre.inventory');
    // Its history: every declaration the mesh keeps for it, newest first, the one its key holds marked, each with its outcome.
    await page.waitForFunction(() => document.querySelector('table.history tbody tr.current')?.getAttribute('data-state') === 'converged', { timeout: 30_000 });
    const history = await page.$$eval('table.history tbody tr', (trs) => trs.map((tr) => [tr.getAttribute('data-sequence'), tr.getAttribute('data-state')]));
    expect(history.slice(0, 2)).toEqual([
      ['3', 'converged'],
      ['2', 'converged'],
    ]);
    expect(await page.$eval('table.history tbody tr.current td', (td) => td.textContent)).toBe('epoch 1, sequence 3 (held now)');
    await screenshot(page, 'node');
    await expectSelfContained(page);
  });

  it('shows what a host sends as text: a <script> and an <img onerror> in a report run nothing', async () => {
    const hostile = '<script>window.pwned = "script"</script><img src=x onerror="window.pwned = \'img\'">';
    await sims.report('sim-web-1', {
      outcome: 'failed',
      error: { resource: hostile, message: hostile },
      steps: [{ resource: hostile, type: 'file', target: `/etc/${hostile}`, verb: 'update', changes: [{ kind: 'create' }], actions: [hostile], status: 'failed', detail: hostile }] as never,
      said: [hostile],
    });
    const fleet = await open('/');
    await fleet.waitForFunction(() => document.querySelector('tr[data-node="sim-web-1"]')?.getAttribute('data-state') === 'failed');
    expect(await fleet.$eval('tr[data-node="sim-web-1"] .problems', (ul) => ul.textContent)).toContain(hostile);
    const page = await open('/node/sim-web-1');
    await page.waitForSelector('ol.reports > li[data-outcome="failed"]');
    await page.click('ol.reports > li[data-outcome="failed"] summary');
    await page.waitForSelector('ol.reports > li[data-outcome="failed"] table.steps');
    const text = await page.$eval('ol.reports > li[data-outcome="failed"]', (li) => li.textContent);
    expect(text).toContain(hostile);
    for (const p of [fleet, page]) {
      expect(await p.evaluate(() => (window as unknown as { pwned?: string }).pwned)).toBeUndefined();
      expect(await p.$$eval('main img, main script', (els) => els.length)).toBe(0);
      await expectSelfContained(p);
    }
    await screenshot(page, 'node-escaped');
  });

  it('is used with the keyboard alone: filter, open a node, open a report', async () => {
    const page = await open('/');
    const focused = () => page.evaluate(() => `${document.activeElement?.tagName.toLowerCase()} ${document.activeElement?.textContent?.trim() ?? ''}`);
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('a Skip to content');
    // Tab on to the text filter and type a node's name.
    for (let i = 0; i < 10 && !(await page.evaluate(() => document.activeElement?.matches('.filters input'))); i++) await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.matches('.filters input'))).toBe(true);
    await page.keyboard.type('sim-db-1');
    await page.waitForFunction(() => document.querySelectorAll('table.fleet tbody tr').length === 1);
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('a sim-db-1');
    await Promise.all([page.waitForNavigation(), page.keyboard.press('Enter')]);
    expect(new URL(page.url()).pathname).toBe('/node/sim-db-1');
    await page.waitForSelector('ol.reports summary');
    for (let i = 0; i < 20 && !(await page.evaluate(() => document.activeElement?.tagName === 'SUMMARY')); i++) await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    expect(await page.$eval('ol.reports details', (d) => (d as HTMLDetailsElement).open)).toBe(true);
  });

  it("passes axe-core's checks: the fleet and a node, at 1280x800 and at a phone's width", async () => {
    for (const viewport of [{ width: 1280, height: 800 }, { width: 390, height: 844 }]) {
      const fleet = await open('/', viewport);
      expect(await axeViolations(fleet), JSON.stringify(await axeViolations(fleet))).toEqual([]);
      const node = await open(`/node/${mesh.host.node}`, viewport);
      // Everything the page reads is in before it is checked: the chart, the reports, the inventory.
      for (const selector of ['.chart svg', 'ol.reports summary', 'pre.inventory']) await node.waitForSelector(selector);
      await node.click('ol.reports summary');
      expect(await axeViolations(node), JSON.stringify(await axeViolations(node))).toEqual([]);
      if (viewport.width < 500) await screenshot(node, 'node-phone');
    }
  });

  it("shows a rollout's waves, each node's phase in its wave, where it halted and why, and follows the record as meshctl rewrites it", async () => {
    const hostile = '<img src=x onerror="window.pwned = \'rollout\'">';
    const at = new Date().toISOString();
    const copy = { epoch: 1, sequence: 4 };
    const failed = { phase: 'failed' as const, mark: copy, report: 7, resource: 'conf', error: `mkdir /etc/app: permission denied ${hostile}` };
    const rollout: Rollout = {
      version: 1, id: 'r-20261203-091502-3fa2', file: 'web.json', digest: `sha256:${'0'.repeat(64)}`,
      declaration: { version: 1, mode: 'converged', resources: [{ type: 'file', id: 'conf', path: '/etc/app.conf', content: 'SECRET-CONTENT' }] },
      waves: [['sim-web-1'], ['sim-web-2', 'sim-db-1'], ['sim-quiet']], wave: 1, waitMs: 120_000, haltOn: ['failed', 'refused', 'silent'], status: 'halted',
      nodes: { 'sim-web-1': { phase: 'converged', mark: copy, report: 9 }, 'sim-web-2': failed, 'sim-db-1': { phase: 'sent', mark: copy, waitFromMs: Date.now() - 5000, deferred: [{ resource: 'app', pid: 4242, since: at, until: at }] }, 'sim-quiet': { phase: 'pending' } },
      halt: { node: 'sim-web-2', phase: 'failed', resource: failed.resource, error: failed.error, wave: 1 },
      createdAt: at, updatedAt: at,
    };
    const store = await RolloutStore.open(nc);
    const revision = await store.write(rollout, 0);
    const list = await open('/rollouts', undefined, `tr[data-rollout="${rollout.id}"]`);
    expect(await list.$eval(`tr[data-rollout="${rollout.id}"]`, (tr) => tr.getAttribute('data-status'))).toBe('halted');
    await Promise.all([list.waitForNavigation(), list.click(`tr[data-rollout="${rollout.id}"] a`)]);
    await list.waitForSelector('section.wave');
    expect(await list.$$eval('section.wave h2', (hs) => hs.map((h) => h.textContent))).toEqual(['Wave 1 of 3: 1 node, done', 'Wave 2 of 3: 2 nodes, halted here', 'Wave 3 of 3: 1 node, not sent']);
    const phases = await list.$$eval('table.wave-nodes tbody tr', (trs) => trs.map((tr) => `${tr.getAttribute('data-node')} ${tr.getAttribute('data-phase')}`));
    expect(phases).toEqual(['sim-web-1 converged', 'sim-web-2 failed', 'sim-db-1 sent', 'sim-quiet pending']);
    expect(await list.$eval('.halt', (p) => p.textContent)).toContain(`Halted at wave 2: sim-web-2 failed: conf: ${failed.error}`);
    expect(await list.$eval('tr[data-node="sim-web-2"] td.why', (td) => td.textContent)).toBe(`conf: ${failed.error}`);
    expect(await list.$eval('tr[data-node="sim-db-1"] .deferred', (span) => span.textContent)).toBe(`app deferred: locked by PID 4242 since ${at}, at most until ${at}`);
    // The declaration shows as its resources' names, never their content; what a host said stays text.
    expect(await list.evaluate(() => document.body.textContent)).not.toContain('SECRET-CONTENT');
    expect(await list.evaluate(() => (window as unknown as { pwned?: string }).pwned)).toBeUndefined();
    expect(await list.$$eval('main img', (els) => els.length)).toBe(0);
    await screenshot(list, 'rollout');
    expect(await axeViolations(list), JSON.stringify(await axeViolations(list))).toEqual([]);
    // The operator fixed it and resumed: meshctl writes the record again, and the page follows.
    const { halt: _halt, ...resumed } = rollout;
    await store.write({ ...resumed, status: 'running', nodes: { ...rollout.nodes, 'sim-web-2': { phase: 'converged', mark: copy, report: 8 } }, updatedAt: new Date().toISOString() }, revision);
    await list.waitForFunction(() => document.querySelector('tr[data-node="sim-web-2"]')?.getAttribute('data-phase') === 'converged' && !document.querySelector('.halt'), { timeout: 10_000 });
    expect(await list.$eval('section.wave[data-wave="1"] h2', (h) => h.textContent)).toBe('Wave 2 of 3: 2 nodes, sending, or awaiting its reports');
    await expectSelfContained(list);
  });
});
