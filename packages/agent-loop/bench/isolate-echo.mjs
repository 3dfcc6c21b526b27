// The isolated tool of the first-call benchmark: plain JavaScript, so its child needs no loader
// (what a built application ships).
export async function run(input) {
  return { echoed: input };
}
