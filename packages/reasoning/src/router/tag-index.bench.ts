import { bench, describe } from 'vitest';
import { linearScan, queries, routerOf, routesOf } from '../../bench/router-workload.js';

const asked = queries();
for (const count of [10, 100, 1_000]) {
  const routes = routesOf(count);
  const router = routerOf(routes);
  describe(`${count} routes, 64 two-tag lookups`, () => {
    bench('linear scan', () => {
      for (const tags of asked) linearScan(routes, tags);
    });
    bench('router index (candidates)', () => {
      for (const tags of asked) router.candidates(tags);
    });
  });
}
