/**
 * Whether text is base64 exactly as it encodes: the alphabet, padding only at the end, nothing the
 * decoder would skip or round away. Node's decoder is lenient (it drops what it cannot read), so two
 * different texts could decode to the same bytes; only the one canonical text is taken.
 */
export function isCanonicalBase64(text: string): boolean {
  return text.length % 4 === 0 && Buffer.from(text, 'base64').toString('base64') === text;
}
