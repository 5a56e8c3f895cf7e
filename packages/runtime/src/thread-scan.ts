import type { LunationStore, RunRecord, ThreadRecord } from '@lunation/contract';

/** Threads read per page of a scan. */
const PAGE_SIZE = 100;

/**
 * The store's threads, oldest first, at most `scanLimit` of them, a page at a time, each with its latest run
 * (read for the whole page at once): what the scans for cut-off and stranded runs look at.
 */
export async function* threadsWithLatestRun(
  store: LunationStore,
  scanLimit: number,
): AsyncGenerator<Array<{ thread: ThreadRecord; latest: RunRecord | undefined }>> {
  let cursor: string | undefined;
  let scanned = 0;
  while (scanned < scanLimit) {
    const page = await store.listThreads({
      limit: Math.min(PAGE_SIZE, scanLimit - scanned),
      ...(cursor ? { cursor } : {}),
    });
    scanned += page.items.length;
    const latest = await Promise.all(page.items.map((thread) => store.getLatestRun(thread.id)));
    yield page.items.map((thread, index) => ({ thread, latest: latest[index] }));
    cursor = page.nextCursor;
    if (cursor === undefined || page.items.length === 0) return;
  }
}
