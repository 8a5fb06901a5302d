import Type from 'typebox';
import { CURVE_KEY_PATTERN, SEALED_FORMAT } from './sealed-value.js';

/**
 * The fields several kinds of resource share, each said once: a kind's schema (src/kinds/KIND/KIND-schema.ts)
 * is made of these and its own. Only the schemas import this file: it loads TypeBox.
 */
export const Id = Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$', description: 'a stable resource id' });
export const AbsolutePath = Type.String({ minLength: 2, maxLength: 4096, pattern: '^/', description: 'an absolute, normal path' });
export const FileMode = Type.String({ pattern: '^[0-7]{3,4}$', description: "an octal mode such as '0644'" });
export const Account = Type.String({ pattern: '^([a-z_][a-z0-9_-]{0,31}\\$?|[0-9]{1,10})$', description: 'a user or group name, or a number' });
export const Take = Type.Boolean({ description: 'take over what is found here (the original is kept and given back on removal)' });
/** A lock file the service or container writes while it must not be interrupted (balena's update locks). */
export const InhibitWhile = Type.String({
  minLength: 2,
  maxLength: 4096,
  pattern: '^/',
  description: "a lock file holding its holder's PID: while it exists and the holder lives, this resource's restart or replacement waits",
});
export const InhibitMaxMs = Type.Integer({ minimum: 0, maximum: 7 * 24 * 3_600_000, description: 'how long a restart or replacement may wait for the lock (ms; default 600000): then it goes ahead' });

/** A sensitive value sealed to the one host that uses it (docs/wire.md, "Sealed values"), as a declaration says it. */
export const SealedValueSchema = Type.Object(
  {
    sealed: Type.Literal(SEALED_FORMAT),
    to: Type.String({ pattern: CURVE_KEY_PATTERN, description: "the host's curve public key (X…)" }),
    from: Type.String({ pattern: CURVE_KEY_PATTERN, description: "the sender's curve public key (X…)" }),
    box: Type.String({ minLength: 44, maxLength: 90 * 1024 * 1024, pattern: '^[A-Za-z0-9+/]*={0,2}$', description: "base64 of 'xkv1', the 24-byte nonce and NaCl's box" }),
  },
  { additionalProperties: false },
);
