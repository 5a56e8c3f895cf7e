import type { LunationStore, RunRecord, ThreadRecord } from '@lunation/contract';

/** Threads read per page of a scan. */
const PAGE_SIZE = 100;

/** Where a scan goes on: the store's cursor after the last thread read; undefined: from the oldest thread. */
export interface ScanPosition {
  cursor?: string | undefined;
}

/**
 * The store's threads, oldest first, at most `scanLimit` of them, a page at a time, each with its latest run
 * (read for the whole page at once): what the scans for cut-off and stranded runs look at. With `position`, the
 * scan starts where the last one stopped and leaves the position after its last thread (back to the oldest
 * after the newest), so repeated scans of a store larger than `scanLimit` reach every thread in turn.
 */
export async function* threadsWithLatestRun(
  store: LunationStore,
  scanLimit: number,
  position: ScanPosition = {},
): AsyncGenerator<Array<{ thread: ThreadRecord; latest: RunRecord | undefined }>> {
  let scanned = 0;
  while (scanned < scanLimit) {
    const { cursor } = position;
    const page = await store.listThreads({
      limit: Math.min(PAGE_SIZE, scanLimit - scanned),
      ...(cursor ? { cursor } : {}),
    });
    scanned += page.items.length;
    position.cursor = page.nextCursor;
    const latest = await Promise.all(page.items.map((thread) => store.getLatestRun(thread.id)));
    yield page.items.map((thread, index) => ({ thread, latest: latest[index] }));
    if (page.nextCursor === undefined || page.items.length === 0) return;
  }
}
