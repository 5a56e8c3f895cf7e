/**
 * The `POST /chat` sends this server is starting, by thread, until their run is logged. A page reloaded right
 * after Send reads its history while its send may still be on its way to the run: the history waits for it
 * (briefly), else it would lack the question whose answer the page then resumes.
 */
export class StartingSends {
  private readonly byThread = new Map<string, Set<Promise<unknown>>>();

  /** Tracks `work` (the send of a run of `threadId`) until it settles; answers it. */
  track<T>(threadId: string, work: Promise<T>): Promise<T> {
    let sends = this.byThread.get(threadId);
    if (!sends) {
      sends = new Set();
      this.byThread.set(threadId, sends);
    }
    const tracked = sends;
    tracked.add(work);
    const forget = () => {
      tracked.delete(work);
      if (tracked.size === 0 && this.byThread.get(threadId) === tracked) this.byThread.delete(threadId);
    };
    work.then(forget, forget);
    return work;
  }

  /** Waits until the sends of `threadId` started so far settled, or `timeoutMs` passed. Never throws. */
  async settled(threadId: string, timeoutMs: number): Promise<void> {
    const sends = this.byThread.get(threadId);
    if (!sends) return;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
    });
    try {
      await Promise.race([Promise.allSettled([...sends]), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}
