import { fleetOrder } from '../fleet/fleet.js';
import type { PageReport, PageRow, RowsMessage } from './page-wire.js';

/**
 * The page's copy of the fleet, kept by the server's events: every row by node, the server's clock
 * (ages are counted on it, not on the browser's), and the newest reports of the node shown.
 */
export class FleetStore {
  readonly rows = new Map<string, PageRow>();
  /** The server's clock minus the browser's. */
  private skewMs = 0;
  private sorted: PageRow[] | undefined;
  readonly reports: PageReport[] = [];
  connected = false;
  /** Set when the first snapshot came. */
  loaded = false;
  private readonly listeners = new Set<() => void>();
  private scheduled = false;

  /** Listens to the server's events (`?node=N` adds that node's reports); EventSource reconnects by itself. */
  connect(node?: string): void {
    const source = new EventSource(`/events${node ? `?node=${encodeURIComponent(node)}` : ''}`);
    source.addEventListener('snapshot', (e) => this.snapshot(JSON.parse((e as MessageEvent<string>).data) as RowsMessage));
    source.addEventListener('rows', (e) => this.update(JSON.parse((e as MessageEvent<string>).data) as RowsMessage));
    source.addEventListener('report', (e) => this.report(JSON.parse((e as MessageEvent<string>).data) as PageReport));
    source.addEventListener('open', () => this.set(() => (this.connected = true)));
    source.addEventListener('error', () => this.set(() => (this.connected = false)));
  }

  nowMs(): number {
    return Date.now() + this.skewMs;
  }

  /** Worst first, as `meshctl status` orders them. */
  list(): PageRow[] {
    this.sorted ??= [...this.rows.values()].sort(fleetOrder);
    return this.sorted;
  }

  /** Called once a frame at most, however many events came in it. */
  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Reports the node's page was first given; newer ones come as events. */
  seedReports(reports: PageReport[]): void {
    this.set(() => {
      const known = new Set(this.reports.map((r) => r.sequence));
      this.reports.push(...reports.filter((r) => !known.has(r.sequence)));
      this.reports.sort((a, b) => b.sequence - a.sequence);
    });
  }

  private snapshot(message: RowsMessage): void {
    this.set(() => {
      this.rows.clear();
      this.apply(message);
      this.loaded = true;
    });
  }

  private update(message: RowsMessage): void {
    this.set(() => this.apply(message));
  }

  private report(report: PageReport): void {
    this.seedReports([report]);
  }

  private apply(message: RowsMessage): void {
    this.skewMs = message.nowMs - Date.now();
    for (const row of message.rows) this.rows.set(row.node, row);
    for (const node of message.removed) this.rows.delete(node);
    this.sorted = undefined;
  }

  private set(change: () => void): void {
    change();
    if (this.scheduled) return;
    this.scheduled = true;
    requestAnimationFrame(() => {
      this.scheduled = false;
      for (const l of this.listeners) l();
    });
  }
}
