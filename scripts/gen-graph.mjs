// Draws docs/layers.svg: src/'s folders (and machines/) with the imports between them, coloured by floor,
// from dependency-cruiser's dot output (the rules of .dependency-cruiser.mjs) through Graphviz. CI runs
// this and fails when the committed picture differs from what the code gives.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';

const depcruise = 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs';
const dot = execFileSync(process.execPath, [depcruise, 'src', 'machines', '--config', '.dependency-cruiser.mjs', '--include-only', '^(src|machines)/', '--output-type', 'dot'], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
writeFileSync('docs/layers.svg', execFileSync('dot', ['-Tsvg'], { input: dot, encoding: 'utf8' }));
