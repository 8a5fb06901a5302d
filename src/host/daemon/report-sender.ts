import type { ReportRef } from '../../../machines/lifecycle.js';
import { REPORT_HEADROOM, type Outbox } from '../../engine/report/outbox.js';
import type { Clock } from '../../core/system/clock.js';
import type { Logger } from '../../core/system/log.js';
import { markStep } from '../../core/system/trace.js';
import type { DaemonLink } from './daemon-link.js';

/** How long after an acknowledged report's removal the outbox is flushed, unless the next report's write did it first. */
const REMOVAL_FLUSH_MS = 1000;

/**
 * The report the lifecycle lets leave, sent: its bytes fitted from the outbox, published, removed once
 * acknowledged. A removal's flush comes a moment later, one at a time (back-to-back reports make it
 * durable with their own writes), or at once when the host ends, so that no timer holds its exit.
 */
export class ReportSender {
  private cancel: (() => void) | undefined;

  constructor(private readonly link: DaemonLink, private readonly outbox: Outbox, private readonly clock: Clock, private readonly log: Logger) {}

  /** The lifecycle's sender, as it is: a report goes from the machine to here, and no closure between. */
  readonly send = async ({ input }: { input: ReportRef }): Promise<void> => {
    markStep('sending');
    // Fitted under the server's limit (less room for the subject and headers); gone means folded into
    // a later one, or acknowledged already.
    const bytes = this.outbox.message(input.sequence, this.link.limit() - REPORT_HEADROOM);
    if (!bytes) return void this.log.debug({ report: input.sequence }, 'link: report folded into a later one; nothing to send');
    const { duplicate } = await this.link.publish(input.sequence, bytes);
    await this.outbox.remove(input.sequence);
    this.flushSoon();
    markStep('removed');
    this.log.debug({ report: input.sequence, duplicate, bytes: bytes.length }, 'link: report acknowledged');
  };

  /** The removals made durable now (the host ends or stands aside). */
  async flushNow(): Promise<void> {
    this.cancel?.();
    this.cancel = undefined;
    await this.flush();
  }

  private flushSoon(): void {
    this.cancel ??= this.clock.after(REMOVAL_FLUSH_MS, () => {
      this.cancel = undefined;
      void this.flush();
    });
  }

  private flush(): Promise<void> {
    return this.outbox.flush().catch((err: Error) => this.log.warn({ err: err.message }, 'the outbox could not be flushed: a report acknowledged just now may be sent again after a power cut'));
  }
}
