/** Most distinct tag sets whose answer the index keeps; past it, answers are computed each time. */
export const tagIndexCacheMax = 1_024;

const separator = '\u0000';

/**
 * Which routes carry every one of a set of tags, answered from postings built once: for each tag,
 * the routes that carry it, in route order. A query walks the shortest posting of its tags and
 * checks the others against each route's tag set; answers are kept per tag set.
 */
export class TagIndex<R> {
  private readonly postings = new Map<string, number[]>();
  private readonly tagSets: ReadonlySet<string>[];
  private readonly answers = new Map<string, readonly R[]>();

  constructor(
    private readonly routes: readonly R[],
    tagsOf: (route: R) => readonly string[],
  ) {
    this.tagSets = routes.map((route) => new Set(tagsOf(route)));
    this.tagSets.forEach((tags, index) => {
      for (const tag of tags) {
        const posting = this.postings.get(tag);
        if (posting === undefined) this.postings.set(tag, [index]);
        else posting.push(index);
      }
    });
  }

  /** The routes carrying every tag, in route order; all routes for no tags. */
  match(tags: readonly string[]): readonly R[] {
    if (tags.length === 0) return this.routes;
    const key = keyOf(tags);
    const known = this.answers.get(key);
    if (known !== undefined) return known;
    const answer = this.compute(tags);
    if (this.answers.size < tagIndexCacheMax) this.answers.set(key, answer);
    return answer;
  }

  private compute(tags: readonly string[]): readonly R[] {
    let shortest: number[] | undefined;
    for (const tag of tags) {
      const posting = this.postings.get(tag);
      if (posting === undefined) return [];
      if (shortest === undefined || posting.length < shortest.length) shortest = posting;
    }
    const answer: R[] = [];
    for (const index of shortest ?? []) {
      const routeTags = this.tagSets[index] as ReadonlySet<string>;
      if (tags.every((tag) => routeTags.has(tag))) answer.push(this.routes[index] as R);
    }
    return Object.freeze(answer);
  }
}

/** One key per tag set, whatever the order; the common one- and two-tag sets skip the sort. */
function keyOf(tags: readonly string[]): string {
  if (tags.length === 1) return tags[0] as string;
  if (tags.length === 2) {
    const [a, b] = tags as [string, string];
    return a < b ? a + separator + b : b + separator + a;
  }
  return [...tags].sort().join(separator);
}
