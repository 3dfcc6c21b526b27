// The router bench's workload, shared by the vitest bench and the ratio script: N routes with
// 3 tags each from a pool of 16, and 64 queries of 2 tags, as an agent would ask ('smart', 'eu').
import { createRouter, type ModelProvider, type Router } from '../src/index.js';

export interface RouteSpec {
  provider: ModelProvider;
  tags: string[];
}

const pool = Array.from({ length: 16 }, (_, i) => `tag${i}`);

/** A deterministic sequence in [0, 1) (no Math.random: every run benches the same routes). */
function sequence(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state / 2_147_483_648;
  };
}

function distinct(next: () => number, count: number): string[] {
  const tags = new Set<string>();
  while (tags.size < count) tags.add(pool[Math.floor(next() * pool.length)] as string);
  return [...tags];
}

const provider: ModelProvider = {
  id: 'bench',
  generate: () => Promise.reject(new Error('not called by the bench')),
  stream: () => ({
    [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(new Error('not called')) }),
  }),
};

export function routesOf(count: number): RouteSpec[] {
  const next = sequence(count);
  return Array.from({ length: count }, (_, i) => ({
    provider: { ...provider, id: `p${i}` },
    tags: distinct(next, 3),
  }));
}

export function queries(): string[][] {
  const next = sequence(99);
  return Array.from({ length: 64 }, () => distinct(next, 2));
}

/** What the router replaces: walk every route, keep those carrying every tag. */
export function linearScan(routes: readonly RouteSpec[], tags: readonly string[]): RouteSpec[] {
  return routes.filter((route) => tags.every((tag) => route.tags.includes(tag)));
}

export function routerOf(routes: readonly RouteSpec[]): Router {
  return createRouter(routes);
}
