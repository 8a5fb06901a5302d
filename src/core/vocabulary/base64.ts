/**
 * Whether text is base64 exactly as it encodes: the alphabet, padding only at the end, nothing the
 * decoder would skip or round away. Node's decoder is lenient (it drops what it cannot read), so two
 * different texts could decode to the same bytes; only the one canonical text is taken.
 */
export function isCanonicalBase64(text: string): boolean {
  return decodeCanonicalBase64(text) !== undefined;
}

/** The bytes of canonical base64 text, decoded once (a megabyte's payload is not decoded twice), or undefined when it is not canonical. */
export function decodeCanonicalBase64(text: string): Buffer | undefined {
  if (text.length % 4 !== 0) return undefined;
  const bytes = Buffer.from(text, 'base64');
  return bytes.toString('base64') === text ? bytes : undefined;
}
