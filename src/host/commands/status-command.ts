import { describeOrder } from '../../core/declaration/order.js';
import { output, type CommandContext } from '../../cli/context.js';
import { EXIT } from '../../core/system/errors.js';
import { hostPaths, withHost } from './with-host.js';
import { Outbox } from '../../engine/report/outbox.js';
import { formatReport } from '../../engine/report/report.js';
import { loadConfig } from '../../core/config/config.js';
import { declaredServiceStates, formatServiceStates } from '../../kinds/service/declared.js';
import { formatKeptFoundFirewalls, keptFoundFirewalls } from '../../machine/filters/filter-kept.js';
import { pauseAt, pauseText } from '../../../machines/pause.js';
import type { ResourceRecord } from '../../core/store/state.js';

/** `mesh-host status`: mode, last applied, report sequence, footprint, services, the found firewall as kept, held, last outcome. */
export async function statusCommand(ctx: CommandContext): Promise<number> {
  if (ctx.flags['last-report'] === true) return lastReportCommand(ctx);
  return withHost(ctx, 'status', async (host) => {
    const s = host.store.state;
    const records = Object.values(s.records);
    const services = await declaredServiceStates(s, records.some((r) => r.type === 'service') ? (await host.env.serviceManager!()).manager : undefined);
    const status = {
      node: host.config.node,
      mode: s.mode ?? null,
      enrolled: s.genesisDigest !== undefined,
      meshHasSpoken: host.kept.exists(),
      lastApplied: s.lastApplied ?? null,
      reportSequence: s.reportSequence,
      lastOutcome: s.lastOutcome ?? null,
      footprint: records,
      held: s.held,
      refusals: s.refusals,
      services,
      foundFirewall: keptFoundFirewalls(s),
      paused: pauseAt(s.pause, ctx.clock.now().getTime(), ctx.clock.boot()),
      deferred: deferredOf(records),
    };
    output(ctx, status, () =>
      [
        `node:            ${status.node}`,
        `mode:            ${status.mode ?? 'none recorded'}`,
        ...(status.paused ? [`paused:          ${pauseText(status.paused).replace(/^paused /, '')}`] : []),
        `last applied:    ${s.lastApplied ? `${describeOrder(s.lastApplied)}, ${s.lastApplied.digest}, at ${s.lastApplied.at}` : 'nothing yet'}`,
        `report sequence: ${s.reportSequence}`,
        `last outcome:    ${s.lastOutcome ? `${s.lastOutcome.outcome} at ${s.lastOutcome.at}${s.lastOutcome.message ? ` (${s.lastOutcome.message})` : ''}` : 'none'}`,
        `footprint:       ${records.length} record${records.length === 1 ? '' : 's'}`,
        ...records.map((r) => `  ${r.type.padEnd(9)} ${r.id.padEnd(20)} ${r.target}${r.created ? '' : ' (taken)'} [${r.origin}]`),
        ...(Array.isArray(services) && services.length === 0 ? [] : ['services:', ...formatServiceStates(services)]),
        ...formatKeptFoundFirewalls(status.foundFirewall),
        `held:            ${s.held.length}`,
        ...s.held.map((h) => `  ${h.target} (${h.id}): ${h.reason}`),
        ...(status.deferred.length > 0 ? [`deferred:        ${status.deferred.length}`] : []),
        ...status.deferred.map((d) => `  ${d.target} (${d.id}): its ${d.because ? `restart (${d.because.join(', ')} changed)` : 'replacement'} waits for ${d.lock} (PID ${d.pid}) since ${d.since}, at most until ${d.until}`),
      ].join('\n'),
    );
    return EXIT.ok;
  });
}

/** The restarts and replacements held off for a lock, as the records keep them, with when they go ahead anyway. */
function deferredOf(records: ResourceRecord[]) {
  return records.flatMap((r) => {
    const d = r.deferred;
    return d ? [{ id: r.id, target: r.target, lock: d.lock, pid: d.pid, since: d.since, until: new Date(Date.parse(d.since) + d.maxMs).toISOString(), ...(d.because ? { because: d.because } : {}) }] : [];
  });
}

/** `mesh-host status --last-report`: the newest report with every step, as the host keeps it (the mesh's copy lists what changed). */
function lastReportCommand(ctx: CommandContext): number {
  const paths = hostPaths(ctx);
  const report = new Outbox(paths.stateDir, loadConfig(paths.configPath).config.outbox).wholeReport();
  if (!report) {
    ctx.print(ctx.json ? 'null' : 'no report kept on this host yet');
    return EXIT.ok;
  }
  output(ctx, report, () => [formatReport(report), ...report.steps.filter((s) => s.status === 'unchanged').map((s) => `  unchanged ${s.type.padEnd(9)} ${s.resource} ${s.target}`)].join('\n'));
  return EXIT.ok;
}
