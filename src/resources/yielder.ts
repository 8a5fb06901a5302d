// The pause lives in the system layer, where the declaration's validation can use it too.
export { yielder } from '../system/yielder.js';
