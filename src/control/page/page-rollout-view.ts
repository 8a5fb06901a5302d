import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { deferredText } from '../fleet/deferred.js';
import type { NodeProgress } from '../fleet/rollout.js';
import { ago, mark } from './page-format.js';
import type { RolloutSummary, RolloutView } from './page-wire.js';

/** How often a rollout is read again while its page is open: it is a record the driving meshctl rewrites as nodes settle. */
const READ_EVERY_MS = 2000;

/** `path` read now and every READ_EVERY_MS while the page shows it: the last answer, or why there is none. */
function usePolled<T>(path: string): { value: T | null; error: string | null; nowMs: number } {
  const [state, setState] = useState<{ value: T | null; error: string | null; nowMs: number }>({ value: null, error: null, nowMs: Date.now() });
  useEffect(() => {
    let stopped = false;
    let timer: number | undefined;
    const read = async () => {
      try {
        const r = await fetch(path, { headers: { Accept: 'application/json' } });
        const body = (await r.json()) as T & { error?: string };
        if (!stopped) setState(r.ok ? { value: body, error: null, nowMs: Date.now() } : (s) => ({ ...s, error: body.error ?? `${r.status}` }));
      } catch (e) {
        if (!stopped) setState((s) => ({ ...s, error: (e as Error).message }));
      }
      if (!stopped) timer = window.setTimeout(read, READ_EVERY_MS);
    };
    void read();
    return () => {
      stopped = true;
      window.clearTimeout(timer);
    };
  }, [path]);
  return state;
}

const haltText = (h: NonNullable<RolloutView['halt']>) => `${h.node} ${h.phase}${h.resource ? `: ${h.resource}` : ''}${h.error ? `: ${h.error}` : ''}`;

/** `/rollouts`: every rollout the mesh keeps, newest first. */
export function RolloutList() {
  const { value: rollouts, error } = usePolled<RolloutSummary[]>('/api/rollouts');
  return html`<section aria-labelledby="rollouts-title">
    <h1 id="rollouts-title">Rollouts</h1>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    ${rollouts === null
      ? html`<p>Reading the rollouts…</p>`
      : rollouts.length === 0
        ? html`<p>No rollouts: <code>meshctl rollout</code> keeps each one in the mesh.</p>`
        : html`<div class="table-wrap"><table class="rollouts">
            <thead><tr><th scope="col">Rollout</th><th scope="col">Status</th><th scope="col">File</th><th scope="col">Wave</th><th scope="col">Nodes</th><th scope="col">Halted at</th><th scope="col">Started</th></tr></thead>
            <tbody>${rollouts.map((r) => html`<tr data-rollout=${r.id} data-status=${r.status}>
              <th scope="row"><a href=${`/rollout/${encodeURIComponent(r.id)}`}>${r.id}</a></th>
              <td data-label="Status"><span class=${`badge rollout-${r.status}`}>${r.status}</span></td>
              <td data-label="File">${r.file}</td>
              <td data-label="Wave">${Math.min(r.wave + 1, r.waves)} of ${r.waves}</td>
              <td data-label="Nodes">${r.nodes}</td>
              <td data-label="Halted at">${r.halt ? haltText(r.halt) : '–'}</td>
              <td data-label="Started">${r.createdAt}</td>
            </tr>`)}</tbody>
          </table></div>`}
  </section>`;
}

/** Where a wave stands against the rollout's current one. */
function waveState(r: RolloutView, index: number): string {
  if (r.halt?.wave === index) return 'halted here';
  if (index < r.wave || (index === r.wave && r.status === 'done')) return 'done';
  if (index === r.wave) return r.status === 'running' ? 'sending, or awaiting its reports' : r.status;
  return 'not sent';
}

function NodeLine({ node, p, nowMs }: { node: string; p: NodeProgress | undefined; nowMs: number }) {
  const phase = p?.phase ?? 'pending';
  return html`<tr data-node=${node} data-phase=${phase}>
    <th scope="row"><a href=${`/node/${encodeURIComponent(node)}`}>${node}</a></th>
    <td data-label="Phase"><span class=${`badge phase-${phase}`}>${phase}</span>${p?.paused ? html` <span class="paused">paused by ${p.paused.by}: ${p.paused.reason}</span>` : ''}${p?.phase === 'sent' && p.deferred ? html` <span class="deferred">${p.deferred.map(deferredText).join('; ')}</span>` : ''}</td>
    <td data-label="Copy">${p?.mark ? mark(p.mark) : '–'}</td>
    <td data-label="Report">${p?.report === undefined ? '–' : `#${p.report}`}</td>
    <td data-label="Waiting">${p?.phase === 'sent' && p.waitFromMs !== undefined ? ago(p.waitFromMs, nowMs).replace(' ago', '') : '–'}</td>
    <td data-label="Why" class="why">${[p?.resource, p?.error].filter(Boolean).join(': ') || '–'}</td>
  </tr>`;
}

/** `/rollout/ID`: its waves, each node's phase in its wave, where it halted and why; read again every 2 s. */
export function RolloutPage({ id }: { id: string }) {
  const { value: r, error } = usePolled<RolloutView>(`/api/rollout/${encodeURIComponent(id)}`);
  if (!r) return html`<h1 id="rollout-title">Rollout ${id}</h1>${error ? html`<p class="error" role="alert">${error}</p>` : html`<p>Reading the rollout…</p>`}`;
  return html`<section aria-labelledby="rollout-title">
    <h1 id="rollout-title">Rollout ${r.id} <span class=${`badge rollout-${r.status}`}>${r.status}</span></h1>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    <dl class="facts">
      <dt>File</dt><dd>${r.file} (${r.mode}, ${r.resources.length} resource${r.resources.length === 1 ? '' : 's'}: ${r.resources.map((res) => `${res.type} ${res.id}`).join(', ') || 'none'})</dd>
      <dt>Digest</dt><dd><code>${r.digest}</code></dd>
      <dt>Halts on</dt><dd>${r.haltOn.join(', ') || 'nothing'}; a node's report is awaited ${Math.round(r.waitMs / 1000)} s</dd>
      <dt>Started</dt><dd>${r.createdAt}, written ${ago(Date.parse(r.updatedAt), r.nowMs)}${r.owner ? ` by meshctl on ${r.owner.host} (pid ${r.owner.pid})` : ''}</dd>
    </dl>
    ${r.halt && html`<p class="halt" role="status"><strong>Halted at wave ${r.halt.wave + 1}:</strong> ${haltText(r.halt)}. Later waves were sent nothing; <code>meshctl rollout --resume ${r.id}</code> goes on once it is fixed.</p>`}
    ${r.waves.map((nodes, i) => html`<section class="wave" data-wave=${i} aria-labelledby=${`wave-${i}`}>
      <h2 id=${`wave-${i}`}>Wave ${i + 1} of ${r.waves.length}: ${nodes.length} node${nodes.length === 1 ? '' : 's'}, ${waveState(r, i)}</h2>
      <div class="table-wrap"><table class="wave-nodes">
        <thead><tr><th scope="col">Node</th><th scope="col">Phase</th><th scope="col">Copy</th><th scope="col">Report</th><th scope="col">Waiting</th><th scope="col">Why</th></tr></thead>
        <tbody>${nodes.map((node) => html`<${NodeLine} key=${node} node=${node} p=${r.nodes[node]} nowMs=${r.nowMs} />`)}</tbody>
      </table></div>
    </section>`)}
  </section>`;
}
