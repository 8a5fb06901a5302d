import { readFileSync } from 'node:fs';
import { connect, credsAuthenticator } from '@nats-io/transport-node';

/** Something with a log to show when a wait times out: a host's daemon. */
interface Logged {
  node: string;
  log(): string;
}

/** Waits for a condition, saying what did not come and the hosts' logs when it does not. */
export async function waitFor(what: string, check: () => boolean | Promise<boolean>, hosts: Logged[] = [], timeoutMs = 30_000): Promise<void> {
  const started = performance.now();
  while (!(await check())) {
    if (performance.now() - started > timeoutMs) throw new Error(`${what} did not come within ${timeoutMs} ms:\n${hosts.map((h) => `--- ${h.node}\n${h.log().split('\n').filter((l) => !l.includes('event loop was held')).join('\n').slice(-3000)}`).join('\n')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * A connection to one server with a credentials file, not reconnecting: `closed` resolves, once the
 * server closes it, with what the server said (its error, then the close's).
 */
export async function refusedAfterRevocation(url: string, creds: string): Promise<{ closed: Promise<string> }> {
  const nc = await connect({ servers: url, authenticator: credsAuthenticator(readFileSync(creds)), reconnect: false });
  let said = '';
  void (async () => {
    for await (const s of nc.status()) if (s.type === 'error') said += `${s.error.message} `;
  })();
  return { closed: nc.closed().then((err) => `${said}${err?.message ?? ''}`.trim() || 'closed without a word') };
}
