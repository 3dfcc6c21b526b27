export { testEffectContext } from './testing/test-effect-context.js';
