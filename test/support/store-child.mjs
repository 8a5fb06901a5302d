// A process that saves the store over and over, for crash and fault-injection tests.
// usage: node store-child.mjs STATE_DIR COUNT [RECORDS]
import { Store } from '../../dist/src/core/store/store.js';
import { pino } from 'pino';

const [dir, count = '1000000', size = '50'] = process.argv.slice(2);
const store = Store.open(dir, pino({ level: 'silent' }));
let n = store.state.reportSequence;
for (let i = 0; i < Number(count); i++) {
  n += 1;
  store.update((s) => {
    s.reportSequence = n;
    s.records = {};
    for (let r = 0; r < Number(size); r++) {
      s.records[`r${r}`] = { id: `r${r}`, type: 'file', target: `/x/${n}/${r}`, origin: 'local', created: true, appliedAt: String(n) };
    }
  });
  try {
    store.save();
  } catch (err) {
    process.exitCode = 9;
    console.error(`save ${n} failed: ${err.code ?? err.message}`);
    break;
  }
}
