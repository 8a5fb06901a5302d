import { html } from 'htm/preact';
import { ago, mark } from './page-format.js';
import type { PageReport } from './page-wire.js';

type PageStep = PageReport['steps'][number];

/** One change: its kind as data, and the words the host made of it (each step carries them beside its changes). */
function Change({ change, words }: { change: PageStep['changes'][number]; words: string | undefined }) {
  return html`<li><code class="kind">${change.kind}</code> ${words ?? ''}</li>`;
}

function Step({ step }: { step: PageStep }) {
  return html`<tr data-status=${step.status}>
    <td data-label="Status"><span class=${`badge step-${step.status}`}>${step.status}</span></td>
    <td data-label="Verb">${step.verb}</td>
    <td data-label="Resource">${step.type} ${step.resource}</td>
    <td data-label="Target" class="target">${step.target}</td>
    <td data-label="Changes">
      ${step.changes.length > 0 ? html`<ul class="changes">${step.changes.map((c, i) => html`<${Change} change=${c} words=${step.actions[i]} />`)}</ul>` : '–'}
      ${step.detail && html`<p class="detail">${step.detail}</p>`}
    </td>
  </tr>`;
}

/** A report in the list: its outcome in one line, its steps, error and said lines when opened. */
export function ReportItem({ report, nowMs }: { report: PageReport; nowMs: number }) {
  const finished = Date.parse(report.finishedAt);
  return html`<li data-sequence=${report.sequence} data-outcome=${report.outcome}>
    <details>
      <summary><span class=${`badge ${report.outcome === 'converged' ? 'converged' : 'failed'}`}>${report.outcome}</span> #${report.sequence} ${report.trigger}, ${Number.isNaN(finished) ? '' : ago(finished, nowMs)}${report.signature ? `, signature ${report.signature.verdict}` : ''}
        ${report.error && html`<span class="error">: ${report.error.resource ? `${report.error.resource}: ` : ''}${report.error.message}</span>`}</summary>
      <div class="report-body">
        <p>Started ${report.startedAt}, finished ${report.finishedAt}; declaration ${report.declaration ? mark(report.declaration) : 'none'}; mode ${report.mode ?? '–'}.</p>
        ${report.signature && report.signature.verdict !== 'verified' && html`<p class="warning">Signature ${report.signature.verdict}: ${report.signature.reason}</p>`}
        ${report.steps.length === 0
          ? html`<p>No step changed anything.</p>`
          : html`<div class="table-wrap"><table class="steps">
              <caption class="visually-hidden">Steps of report ${report.sequence}</caption>
              <thead><tr><th scope="col">Status</th><th scope="col">Verb</th><th scope="col">Resource</th><th scope="col">Target</th><th scope="col">Changes</th></tr></thead>
              <tbody>${report.steps.map((s) => html`<${Step} step=${s} />`)}</tbody>
            </table></div>`}
        ${report.said.length > 0 && html`<h3>Said</h3><ul class="said">${report.said.map((line) => html`<li>${line}</li>`)}</ul>`}
      </div>
    </details>
  </li>`;
}
