import { describeOrder, type Order } from '../../core/declaration/order.js';
import { formatAgo } from '../fleet/fleet.js';

/** `4s ago`, counted on the server's clock. */
export const ago = (atMs: number, nowMs: number) => `${formatAgo(Math.max(0, nowMs - atMs))} ago`;

/** A mark as the page shows it (the one print of it), `–` for none. */
export const mark = (m: Order | null | undefined) => (m ? describeOrder(m) : '–');
