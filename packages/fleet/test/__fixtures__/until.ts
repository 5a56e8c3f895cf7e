/** Polls `condition` every 10 ms until it holds or `timeoutMs` passed (the caller's assertions then say what is missing). */
export async function until(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
}
