import { html, render } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { FleetView } from './fleet-view.js';
import { NodePage } from './node-view.js';
import { RolloutList, RolloutPage } from './page-rollout-view.js';
import { FleetStore } from './page-store.js';

/**
 * The page: `/` is the fleet, `/node/NODE` one node. Everything shown comes from the server's events
 * and reads; nothing here sends anything that changes the mesh. Text from hosts is rendered as text
 * by Preact (never as HTML).
 */
const nodeOfPath = /^\/node\/([^/]+)$/.exec(location.pathname);
const node = nodeOfPath ? decodeURIComponent(nodeOfPath[1]!) : undefined;
const rolloutOfPath = /^\/rollout\/([^/]+)$/.exec(location.pathname);
const rollout = rolloutOfPath ? decodeURIComponent(rolloutOfPath[1]!) : undefined;
const rollouts = location.pathname === '/rollouts';
const store = new FleetStore();
store.connect(node);

/** What the path shows: a node, a rollout, the rollouts, or the fleet. */
function view() {
  if (node) return html`<${NodePage} node=${node} store=${store} />`;
  if (rollout) return html`<${RolloutPage} id=${rollout} />`;
  if (rollouts) return html`<${RolloutList} />`;
  return html`<${FleetView} store=${store} />`;
}

function App() {
  const [, setTick] = useState(0);
  useEffect(() => {
    const unsubscribe = store.subscribe(() => setTick((t) => t + 1));
    // Ages move on even when nothing is heard.
    const timer = window.setInterval(() => setTick((t) => t + 1), 1000);
    return () => {
      unsubscribe();
      window.clearInterval(timer);
    };
  }, []);
  return html`<header class="top">
      <a class="skip" href="#main">Skip to content</a>
      <a class="brand" href="/">mesh</a>
      <nav aria-label="pages"><a href="/">Fleet</a> <a href="/rollouts">Rollouts</a></nav>
      <span class=${`link ${store.connected ? 'up' : 'down'}`} role="status">${store.connected ? 'live' : 'reconnecting…'}</span>
    </header>
    <main id="main" tabindex="-1">${view()}</main>`;
}

document.title = `${node ?? rollout ?? (rollouts ? 'Rollouts' : 'Fleet')} · mesh`;
render(html`<${App} />`, document.getElementById('app')!);
