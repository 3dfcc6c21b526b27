export { ManualTime } from './testing/manual-time.js';
export { testEffectContext } from './testing/test-effect-context.js';
