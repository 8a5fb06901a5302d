import type { ServerResponse } from 'node:http';

/** A client's buffer may grow this far while it reads slowly; past it, it is dropped and reconnects (its EventSource does) to a fresh snapshot. */
const MAX_BUFFERED = 8 << 20;

/** One server-sent event stream to one browser. */
export class EventStream {
  private readonly keepAlive: NodeJS.Timeout;
  private closed = false;

  constructor(private readonly res: ServerResponse, private readonly onClose: () => void) {
    res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-store', 'X-Accel-Buffering': 'no' });
    // A comment now and then keeps proxies and the browser from taking a quiet stream for a dead one.
    this.keepAlive = setInterval(() => this.write(': keep-alive\n\n'), 15_000);
    res.on('close', () => this.close());
  }

  send(event: string, data: unknown): void {
    this.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  private write(text: string): void {
    if (this.closed) return;
    if (this.res.writableLength > MAX_BUFFERED) {
      this.res.destroy();
      return;
    }
    this.res.write(text);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.keepAlive);
    this.onClose();
    if (!this.res.writableEnded) this.res.end();
  }
}
