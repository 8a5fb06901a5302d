import { html } from 'htm/preact';
import { Component } from 'preact';
import { useState } from 'preact/hooks';
import { FLEET_STATES } from '../fleet/fleet.js';
import { describeLabels } from '../fleet/labels.js';
import { ago, mark } from './page-format.js';
import type { FleetStore } from './page-store.js';
import type { PageRow } from './page-wire.js';

const COLUMNS = ['Node', 'State', 'Mode', 'Last outcome', 'Applied', 'Newest', 'Report', 'Heartbeat', 'Signature', 'Labels'];

/** Whether a row passes the filters: the label chosen (`k=v`), and the text anywhere in its node, labels or problems. */
function shown(row: PageRow, label: string, text: string): boolean {
  if (label && !describeLabels(row.labels).split(', ').includes(label)) return false;
  if (!text) return true;
  const needle = text.toLowerCase();
  return [row.node, row.state, describeLabels(row.labels), ...row.problems].some((s) => s.toLowerCase().includes(needle));
}

interface RowProps {
  row: PageRow;
  /** The ages as shown (`4s ago`): a row is drawn again when its data or these words change, not on every tick. */
  outcomeAge: string;
  beatAge: string;
}

/** One node's row. With a thousand rows, redrawing only the ones that changed keeps the page within a frame of the bus. */
class Row extends Component<RowProps> {
  override shouldComponentUpdate(next: RowProps): boolean {
    return next.row !== this.props.row || next.outcomeAge !== this.props.outcomeAge || next.beatAge !== this.props.beatAge;
  }

  override render({ row, outcomeAge, beatAge }: RowProps) {
    const outcome = row.lastOutcome;
    const cell = (col: string, content: unknown) => html`<td data-col=${col} data-label=${col}>${content}</td>`;
    return html`<tr data-node=${row.node} data-state=${row.state}>
      <th scope="row" data-col="node" data-label="Node"><a href=${`/node/${encodeURIComponent(row.node)}`}>${row.node}</a>
        ${row.problems.length > 0 && html`<ul class="problems">${row.problems.map((p) => html`<li>${p}</li>`)}</ul>`}</th>
      ${cell('state', html`<span class=${`badge ${row.state}`}>${row.state}</span>`)}
      ${cell('mode', row.mode ?? '–')}
      ${cell('outcome', outcome ? `${outcome.outcome} ${outcomeAge} (${outcome.trigger})` : '–')}
      ${cell('applied', mark(row.lastApplied))}
      ${cell('newest', mark(row.newest))}
      ${cell('report', row.reportSequence === null ? '–' : `#${row.reportSequence}`)}
      ${cell('heartbeat', row.heartbeat ? beatAge : 'never')}
      ${cell('signature', row.signature ?? '–')}
      ${cell('labels', describeLabels(row.labels) || '–')}
    </tr>`;
  }
}

const rowProps = (row: PageRow, nowMs: number): RowProps => ({
  row,
  outcomeAge: row.lastOutcome ? ago(Date.parse(row.lastOutcome.at), nowMs) : '',
  beatAge: row.heartbeat ? ago(row.heartbeat.atMs, nowMs) : '',
});

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
            <tbody>${visible.map((row) => html`<${Row} key=${row.node} ...${rowProps(row, nowMs)} />`)}</tbody>
          </table></div>`}
  </section>`;
}
