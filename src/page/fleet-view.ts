import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { FLEET_STATES } from '../fleet/fleet.js';
import { describeLabels } from '../fleet/labels.js';
import { ago, mark } from './format.js';
import type { FleetStore } from './store.js';
import type { PageRow } from './wire.js';

const COLUMNS = ['Node', 'State', 'Mode', 'Last outcome', 'Applied', 'Newest', 'Report', 'Heartbeat', 'Signature', 'Labels'];

/** Whether a row passes the filters: the label chosen (`k=v`), and the text anywhere in its node, labels or problems. */
function shown(row: PageRow, label: string, text: string): boolean {
  if (label && !describeLabels(row.labels).split(', ').includes(label)) return false;
  if (!text) return true;
  const needle = text.toLowerCase();
  return [row.node, row.state, describeLabels(row.labels), ...row.problems].some((s) => s.toLowerCase().includes(needle));
}

function Row({ row, nowMs }: { row: PageRow; nowMs: number }) {
  const outcome = row.lastOutcome;
  const cell = (col: string, content: unknown) => html`<td data-col=${col} data-label=${col}>${content}</td>`;
  return html`<tr data-node=${row.node} data-state=${row.state}>
    <th scope="row" data-col="node" data-label="Node"><a href=${`/node/${encodeURIComponent(row.node)}`}>${row.node}</a>
      ${row.problems.length > 0 && html`<ul class="problems">${row.problems.map((p) => html`<li>${p}</li>`)}</ul>`}</th>
    ${cell('state', html`<span class=${`badge ${row.state}`}>${row.state}</span>`)}
    ${cell('mode', row.mode ?? '–')}
    ${cell('outcome', outcome ? `${outcome.outcome} ${ago(Date.parse(outcome.at), nowMs)} (${outcome.trigger})` : '–')}
    ${cell('applied', mark(row.lastApplied))}
    ${cell('newest', mark(row.newest))}
    ${cell('report', row.reportSequence === null ? '–' : `#${row.reportSequence}`)}
    ${cell('heartbeat', row.heartbeat ? ago(row.heartbeat.atMs, nowMs) : 'never')}
    ${cell('signature', row.signature ?? '–')}
    ${cell('labels', describeLabels(row.labels) || '–')}
  </tr>`;
}

/** The fleet: counts by state, the filters, and one row a node, worst first. */
export function FleetView({ store }: { store: FleetStore }) {
  const [label, setLabel] = useState('');
  const [text, setText] = useState('');
  const rows = store.list();
  const nowMs = store.nowMs();
  const labels = [...new Set(rows.flatMap((r) => describeLabels(r.labels).split(', ').filter(Boolean)))].sort();
  const visible = rows.filter((r) => shown(r, label, text));
  const counts = FLEET_STATES.map((s) => [s, rows.filter((r) => r.state === s).length] as const);
  return html`<section aria-labelledby="fleet-title">
    <h1 id="fleet-title">Fleet <span class="count">${rows.length} node${rows.length === 1 ? '' : 's'}</span></h1>
    <ul class="counts" aria-label="nodes by state">
      ${counts.map(([s, n]) => html`<li data-state=${s} class=${n === 0 ? 'none' : ''}><span class=${`badge ${s}`}>${s}</span> <strong>${n}</strong></li>`)}
    </ul>
    <div class="filters" role="search">
      <label>Label <select value=${label} onChange=${(e: Event) => setLabel((e.target as HTMLSelectElement).value)}>
        <option value="">any</option>
        ${labels.map((l) => html`<option value=${l}>${l}</option>`)}
      </select></label>
      <label>Text <input type="search" value=${text} placeholder="node, label, problem" onInput=${(e: Event) => setText((e.target as HTMLInputElement).value)} /></label>
      <span class="shown" aria-live="polite">${visible.length === rows.length ? '' : `${visible.length} shown`}</span>
    </div>
    ${!store.loaded
      ? html`<p>Reading the fleet…</p>`
      : rows.length === 0
        ? html`<p>No nodes: the mesh has no declarations, reports or heartbeats yet.</p>`
        : html`<div class="table-wrap"><table class="fleet">
            <caption class="visually-hidden">Every node, worst first</caption>
            <thead><tr>${COLUMNS.map((c) => html`<th scope="col">${c}</th>`)}</tr></thead>
            <tbody>${visible.map((row) => html`<${Row} key=${row.node} row=${row} nowMs=${nowMs} />`)}</tbody>
          </table></div>`}
  </section>`;
}
