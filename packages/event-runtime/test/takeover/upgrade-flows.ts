// The flows of the rolling-upgrade process test: the new build has `signalled`, the old one not.
import type { Flow } from '../../src/index.js';

export const signalled: Flow<null, string> = {
  name: 'upgrade-signalled',
  run: async (ctx) => {
    const got = await ctx.waitForSignal('go');
    return got.received ? `signalled by ${String(got.payload)}` : 'no signal';
  },
};

export const other: Flow<null, string> = { name: 'upgrade-other', run: async () => 'other' };
