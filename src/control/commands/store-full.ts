import type { NatsConnection } from '@nats-io/transport-node';
import { refused, type HostError } from '../../core/system/errors.js';

/**
 * Why a put into a stream was turned away for want of room, read from the server as data (the stream's
 * bytes against its max_bytes, the account's storage against its limit), never from the error's words:
 * a refusal naming the limit and what to do, or undefined when neither is full (the error is another's).
 */
export async function storeFullRefusal(nc: NatsConnection, stream: string, adding: number, err: unknown): Promise<HostError | undefined> {
  if (!isApiError(err)) return undefined;
  const { jetstreamManager } = await import('@nats-io/jetstream');
  const jsm = await jetstreamManager(nc);
  const info = await jsm.streams.info(stream).catch(() => undefined);
  const maxBytes = info?.config.max_bytes ?? -1;
  if (info && maxBytes > 0 && info.state.bytes + adding > maxBytes) {
    return refused(`the mesh's stream ${stream} is full: it holds ${info.state.bytes} bytes of its limit of ${maxBytes} (max_bytes); nothing was sent`, [
      `raise the stream's limit (nats stream edit ${stream} --max-bytes ...), or remove what it no longer needs, then send again`,
    ], 'unappliable', [{ kind: 'stream-max-bytes', entry: stream }]);
  }
  const account = await jsm.getAccountInfo().catch(() => undefined);
  const limit = account?.limits.max_storage ?? -1;
  if (account && limit > 0 && account.storage + adding > limit) {
    return refused(`the mesh's account is full: its streams hold ${account.storage} bytes of its storage limit of ${limit} (max_storage); nothing was sent`, [
      "raise the account's JetStream storage limit, or free room in its streams, then send again",
    ], 'unappliable', [{ kind: 'account-max-storage', entry: 'account' }]);
  }
  return undefined;
}

/** An error the JetStream API answered (it carries the server's err_code). */
function isApiError(err: unknown): boolean {
  return err instanceof Error && typeof (err as { code?: unknown }).code === 'number' && typeof (err as { apiError?: unknown }).apiError === 'function';
}
