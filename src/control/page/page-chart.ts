/**
 * The lifecycle chart (drawn by graphviz from machines/ at build time) with the host's current state
 * lit: every state node the host is in, and each compound state around them. Graphviz names each
 * state node's group by its id in a <title> (`host.serving.worker.idle`) and each compound state's
 * cluster `cluster_<id>`.
 */

/** The ids a state value names: `{serving: {worker: 'idle'}}` under `host` → host.serving, host.serving.worker, host.serving.worker.idle. */
export function activeIds(value: unknown, prefix: string): string[] {
  if (typeof value === 'string') return [`${prefix}.${value}`];
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value as Record<string, unknown>).flatMap(([key, child]) => [`${prefix}.${key}`, ...activeIds(child, `${prefix}.${key}`)]);
}

let chartText: Promise<string> | undefined;

/** The chart's SVG element, made from the served file (parsed as XML: nothing in it runs). */
export async function loadChart(): Promise<SVGSVGElement> {
  chartText ??= fetch('/assets/lifecycle.svg').then((r) => {
    if (!r.ok) throw new Error(`the chart: ${r.status}`);
    return r.text();
  });
  const doc = new DOMParser().parseFromString(await chartText, 'image/svg+xml');
  const svg = document.importNode(doc.documentElement, true) as unknown as SVGSVGElement;
  svg.removeAttribute('width');
  svg.removeAttribute('height');
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-labelledby', 'chart-title');
  return svg;
}

/** The machine's id: the graph's own title. */
export function machineId(svg: SVGSVGElement): string {
  return svg.querySelector('g.graph > title')?.textContent ?? 'host';
}

/** Lights the states of `value` and unlights the rest; returns the ids lit. */
export function highlight(svg: SVGSVGElement, value: unknown): string[] {
  const ids = new Set(activeIds(value, machineId(svg)));
  const lit: string[] = [];
  for (const group of svg.querySelectorAll<SVGGElement>('g.node, g.cluster')) {
    const title = group.querySelector('title')?.textContent ?? '';
    const id = group.classList.contains('cluster') ? title.replace(/^cluster_/, '') : title;
    const on = ids.has(id);
    group.classList.toggle('active', on);
    if (on) lit.push(id);
  }
  return lit;
}
