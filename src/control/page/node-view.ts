import { html } from 'htm/preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { highlight, loadChart } from './page-chart.js';
import { ago, mark } from './page-format.js';
import { ReportItem } from './report-view.js';
import { stateLine } from '../fleet/state-line.js';
import type { FleetStore } from './page-store.js';
import type { InventoryAnswer, NodeView, StatusAnswer } from './page-wire.js';

/** How often the host's status is asked while its page is open. */
const STATUS_EVERY_MS = 2000;

async function getJson<T>(path: string): Promise<T> {
  const r = await fetch(path, { headers: { Accept: 'application/json' } });
  if (!r.ok) throw new Error(`${path}: ${r.status} ${await r.text()}`);
  return (await r.json()) as T;
}

/** The lifecycle chart, lit from the host's status asked every few seconds. */
function Lifecycle({ node }: { node: string }) {
  const box = useRef<HTMLDivElement>(null);
  const svg = useRef<SVGSVGElement | null>(null);
  const [status, setStatus] = useState<StatusAnswer | null>(null);
  const [lit, setLit] = useState<string[]>([]);
  useEffect(() => {
    let stopped = false;
    let timer: number | undefined;
    const ask = async () => {
      const answer = await getJson<StatusAnswer>(`/api/node/${encodeURIComponent(node)}/status`).catch((e: Error) => ({ ok: false as const, error: e.message }));
      if (stopped) return;
      setStatus(answer);
      if (svg.current) setLit(highlight(svg.current, answer.ok ? answer.status.state : null));
      timer = window.setTimeout(ask, STATUS_EVERY_MS);
    };
    void loadChart().then((element) => {
      if (stopped || !box.current) return;
      svg.current = element;
      box.current.replaceChildren(element);
      void ask();
    });
    return () => {
      stopped = true;
      window.clearTimeout(timer);
    };
  }, [node]);
  return html`<section aria-labelledby="chart-title">
    <h2 id="chart-title">Lifecycle</h2>
    <p class="status" aria-live="polite" data-lit=${lit.join(' ')}>
      ${status === null ? 'Asking the host…' : status.ok ? `Now: ${stateLine(status.status.state)}` : `The host does not answer: ${status.error}`}
    </p>
    <div class="chart" ref=${box} tabindex="0" role="region" aria-label="The lifecycle chart (scrolls sideways)"></div>
  </section>`;
}

function Inventory({ node }: { node: string }) {
  const [answer, setAnswer] = useState<InventoryAnswer | null>(null);
  useEffect(() => {
    void getJson<InventoryAnswer>(`/api/node/${encodeURIComponent(node)}/inventory`).then(setAnswer, (e: Error) => setAnswer({ ok: false, error: e.message }));
  }, [node]);
  return html`<section aria-labelledby="inventory-title">
    <h2 id="inventory-title">Inventory</h2>
    ${answer === null ? html`<p>Asking the host…</p>` : answer.ok ? html`<details><summary>As the host answered</summary><pre class="inventory">${JSON.stringify(answer.inventory, null, 2)}</pre></details>` : html`<p>The host does not answer: ${answer.error}</p>`}
  </section>`;
}

function Declaration({ view }: { view: NodeView }) {
  const d = view.declaration;
  return html`<section aria-labelledby="declaration-title">
    <h2 id="declaration-title">Declaration</h2>
    ${!d
      ? html`<p>The mesh holds no declaration for this node.</p>`
      : html`<p>Declaration of ${mark(d.mark)}, mode ${d.mode}, ${d.resources.length} resource${d.resources.length === 1 ? '' : 's'}.</p>
        <div class="table-wrap"><table class="resources">
          <thead><tr><th scope="col">Type</th><th scope="col">Id</th><th scope="col">Target</th><th scope="col">Settings</th></tr></thead>
          <tbody>${d.resources.map((r) => html`<tr><td>${r.type}</td><td>${r.id}</td><td>${r.target}</td><td>${[r.state, r.mode, r.owner && `owner ${r.owner}`, r.group && `group ${r.group}`, r.sensitive && 'sensitive'].filter(Boolean).join(', ')}</td></tr>`)}</tbody>
        </table></div>`}
  </section>`;
}

/** Every declaration the mesh keeps for the node, newest first, as `meshctl history NODE` says them. */
function History({ view }: { view: NodeView }) {
  return html`<section aria-labelledby="history-title">
    <h2 id="history-title">History</h2>
    ${view.history.length === 0
      ? html`<p>The mesh keeps no declaration for this node.</p>`
      : html`${view.historyHeld > view.history.length ? html`<p>The newest ${view.history.length} of ${view.historyHeld}.</p>` : null}
        <div class="table-wrap" tabindex="0" role="region" aria-label="The history (scrolls sideways)"><table class="history">
          <thead><tr><th scope="col">Sequence</th><th scope="col">Put</th><th scope="col">Outcome</th><th scope="col">Signed by</th><th scope="col">Changed</th></tr></thead>
          <tbody>${view.history.map((h) => html`<tr data-sequence=${h.mark?.sequence ?? ''} data-state=${h.state} class=${h.current ? 'current' : ''}><td>${mark(h.mark)}${h.current ? ' (held now)' : ''}</td><td>${h.at}</td><td>${h.outcome}</td><td><code>${h.signedBy}</code></td><td>${h.changes}</td></tr>`)}</tbody>
        </table></div>
        <p>Put an earlier one back with <code>meshctl rollback ${view.node} --to N</code>.</p>`}
  </section>`;
}

/** A node's page: its row, its lifecycle, its reports newest first, its declaration and its inventory. */
export function NodePage({ node, store }: { node: string; store: FleetStore }) {
  const [view, setView] = useState<NodeView | null>(null);
  const [error, setError] = useState<string | null>(null);
  const row = store.rows.get(node) ?? view?.row ?? null;
  // Read again when the mesh says something new to the node, or the node reports: the declaration shown
  // is the one it holds, and its history says what became of each.
  const newest = row?.newest?.digest;
  const reported = row?.reportSequence;
  useEffect(() => {
    getJson<NodeView>(`/api/node/${encodeURIComponent(node)}`).then((v) => {
      store.seedReports(v.reports);
      setView(v);
    }, (e: Error) => setError(e.message));
  }, [node, newest, reported]);
  const nowMs = store.nowMs();
  return html`<section aria-labelledby="node-title">
    <p><a href="/">← Fleet</a></p>
    <h1 id="node-title">${node} ${row && html`<span class=${`badge ${row.state}`} data-state=${row.state}>${row.state}</span>`}</h1>
    ${row && html`<p class="summary">Mode ${row.mode ?? '–'}; applied ${mark(row.lastApplied)}, newest ${mark(row.newest)}; heartbeat ${row.heartbeat ? ago(row.heartbeat.atMs, nowMs) : 'never'}; signature ${row.signature ?? '–'}.</p>
      ${row.problems.length > 0 && html`<ul class="problems">${row.problems.map((p) => html`<li>${p}</li>`)}</ul>`}`}
    ${error && html`<p role="alert">${error}</p>`}
  </section>
  <${Lifecycle} node=${node} />
  <section aria-labelledby="reports-title">
    <h2 id="reports-title">Reports</h2>
    ${view && view.reportsHeld > store.reports.length ? html`<p>The newest ${store.reports.length} of ${view.reportsHeld}.</p>` : null}
    ${store.reports.length === 0 ? html`<p>${view ? 'No report yet.' : 'Reading…'}</p>` : html`<ol class="reports">${store.reports.map((r) => html`<${ReportItem} key=${r.sequence} report=${r} nowMs=${nowMs} />`)}</ol>`}
  </section>
  ${view && html`<${Declaration} view=${view} />`}
  ${view && html`<${History} view=${view} />`}
  <${Inventory} node=${node} />`;
}
