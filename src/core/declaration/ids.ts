/** Node ids are one NATS subject token and one KV key (docs/wire.md). */
export const NODE_ID_PATTERN = '^[A-Za-z0-9_-]{1,64}$';
