/**
 * Waits for a condition the test cannot be called back on: polls `check` every 25 ms until it
 * returns a truthy value, which it resolves to, and fails after `timeoutMs` (10 s by default:
 * room for a loaded machine; the test's own timeout is the backstop) naming `what`. Truthy,
 * so a check returns `true`/`false` or the value it waits for (`undefined` until it is there);
 * a value that may be `0` or `""` is wrapped (`{ value }`). Never a sleep the test hopes is long
 * enough: the wait ends when the condition holds.
 */
export async function eventually<T>(
  check: () => T | Promise<T>,
  timeoutMs = 10_000,
  what = "condition",
): Promise<NonNullable<T>> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
