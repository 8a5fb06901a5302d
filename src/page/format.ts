import { formatAgo, markText } from '../fleet/fleet.js';
import type { Mark } from '../declaration/order.js';

/** `4s ago`, counted on the server's clock. */
export const ago = (atMs: number, nowMs: number) => `${formatAgo(Math.max(0, nowMs - atMs))} ago`;

export const mark = (m: Pick<Mark, 'epoch' | 'sequence'> | null | undefined) => (m ? markText(m) : '–');
