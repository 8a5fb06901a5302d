/** A label's key and value: what an operator types, kept short and plain so a selector reads unambiguously. */
const KEY = /^[A-Za-z0-9][A-Za-z0-9_./-]{0,62}$/;
const VALUE = /^[A-Za-z0-9_./-]{0,63}$/;

export type Labels = Record<string, string>;

/** One term of a selector: the key has this value, or has not. */
export interface SelectorTerm {
  key: string;
  op: '=' | '!=';
  value: string;
}

/** `k=v` as a label, or why not. */
export function parseLabel(text: string): { key: string; value: string } | string {
  const at = text.indexOf('=');
  if (at < 0) return `'${text}' is not a label: write key=value`;
  const key = text.slice(0, at);
  const value = text.slice(at + 1);
  if (!KEY.test(key)) return `'${text}': the key '${key}' must be letters, digits and _ . / - (up to 63, starting with a letter or digit)`;
  if (!VALUE.test(value)) return `'${text}': the value '${value}' must be letters, digits and _ . / - (up to 63)`;
  return { key, value };
}

/** `role=web,site!=b`: every term must hold. Returns the terms, or why the text is not a selector. */
export function parseSelector(text: string): SelectorTerm[] | string {
  const terms: SelectorTerm[] = [];
  for (const part of text.split(',').map((p) => p.trim())) {
    if (part === '') return `'${text}' is not a selector: an empty term (write key=value, key!=value, joined by commas)`;
    const negated = part.includes('!=');
    const label = parseLabel(negated ? part.replace('!=', '=') : part);
    if (typeof label === 'string') return `--select ${text}: ${label.replace(/^'[^']*'/, `'${part}'`)}`;
    terms.push({ key: label.key, op: negated ? '!=' : '=', value: label.value });
  }
  return terms;
}

export function matches(labels: Labels | undefined, selector: SelectorTerm[]): boolean {
  return selector.every((t) => (t.op === '=' ? labels?.[t.key] === t.value : labels?.[t.key] !== t.value));
}

export const describeSelector = (selector: SelectorTerm[]) => selector.map((t) => `${t.key}${t.op}${t.value}`).join(',');

/** `role=web, site=a`: a node's labels in one line. */
export const describeLabels = (labels: Labels | undefined) =>
  Object.entries(labels ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join(', ');
