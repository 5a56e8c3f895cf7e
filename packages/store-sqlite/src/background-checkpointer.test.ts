import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { LunationError } from '@lunation/contract';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { BackgroundCheckpointer } from './background-checkpointer.js';
import { SqliteStore, type SqliteStorePathOptions } from './sqlite-store.js';

const directory = mkdtempSync(join(tmpdir(), 'lunation-sqlite-checkpoint-'));
let files = 0;
const stores: SqliteStore[] = [];

afterEach(async () => {
  await Promise.all(stores.splice(0).map((store) => store.close()));
});
afterAll(() => rmSync(directory, { recursive: true, force: true }));

async function openStore(options: Partial<SqliteStorePathOptions> = {}): Promise<[SqliteStore, string]> {
  files += 1;
  const path = join(directory, `test-${files}.db`);
  const store = await SqliteStore.open({ path, ...options });
  stores.push(store);
  await store.createThread({ id: 't1' });
  return [store, path];
}

let messageCount = 0;
async function commitMessages(store: SqliteStore, count: number): Promise<void> {
  for (let index = 0; index < count; index += 1) {
    const { messageCount: next } = await store.commit({
      threadId: 't1',
      expectedMessageCount: messageCount,
      messages: [
        { id: `m${messageCount}`, role: 'user', content: [{ type: 'text', text: 'x'.repeat(500) }] },
      ],
    });
    messageCount = next;
  }
}

/**
 * The log's last frame (`mxFrame`) and how many frames are copied into the database (`nBackfill`), read from the
 * WAL index (`<db>-shm`, native byte order) without a connection, which could checkpoint on its own.
 */
function walIndex(path: string): { frames: number; backfilled: number } {
  const header = readFileSync(`${path}-shm`).subarray(0, 136);
  const view = new DataView(header.buffer, header.byteOffset, header.byteLength);
  return { frames: view.getUint32(16, true), backfilled: view.getUint32(96, true) };
}

async function until(condition: () => boolean): Promise<void> {
  for (let waited = 0; !condition(); waited += 10) {
    if (waited > 10_000) throw new Error('timed out');
    await sleep(10);
  }
}

describe('SqliteStore background checkpoints', () => {
  it('copies the log into the database off the commit path, and the log restarts after it', async () => {
    messageCount = 0;
    const [store, path] = await openStore();
    await commitMessages(store, 50);
    const written = walIndex(path).frames;
    expect(written).toBeGreaterThan(50);
    // Far below SQLite's automatic checkpoint (1000 pages): only the background thread copies these frames.
    await until(() => walIndex(path).backfilled === walIndex(path).frames);
    expect(walIndex(path).frames).toBeGreaterThanOrEqual(written);

    // The next commit that finds the whole log copied writes from its start again (unless a checkpoint holds a
    // lock just then: it tries again at the next commit).
    let commits = 0;
    while (walIndex(path).frames >= written && commits < 5) {
      await until(() => walIndex(path).backfilled === walIndex(path).frames);
      await commitMessages(store, 1);
      commits += 1;
    }
    expect(walIndex(path).frames).toBeLessThan(written);
    expect((await store.listMessages('t1')).map((record) => record.seq)).toEqual(
      Array.from({ length: 50 + commits }, (_, index) => index + 1),
    );
  });

  it("leaves the log to the commits' own automatic checkpoints with checkpoint: 'inline'", async () => {
    messageCount = 0;
    const [store, path] = await openStore({ checkpoint: 'inline' });
    await commitMessages(store, 50);
    await sleep(100);
    expect(walIndex(path)).toEqual({ frames: expect.any(Number), backfilled: 0 });
    expect(walIndex(path).frames).toBeGreaterThan(50);
  });

  it('stops the checkpointer in close(), so the store closes the last connection and removes the log', async () => {
    messageCount = 0;
    const [store, path] = await openStore();
    await commitMessages(store, 20);
    expect(existsSync(`${path}-wal`)).toBe(true);
    await store.close();
    expect(existsSync(`${path}-wal`)).toBe(false);
    expect(existsSync(`${path}-shm`)).toBe(false);
  });

  it.each([['close'], ['open']])('lets a process that leaves its store %s exit on its own', async (mode) => {
    const fixture = join(dirname(fileURLToPath(import.meta.url)), '__fixtures__', 'checkpointer-exit.ts');
    files += 1;
    const path = join(directory, `exit-${files}.db`);
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--conditions=@lunation/source', '--import', 'tsx', fixture, path, mode],
      { cwd: dirname(fixture), timeout: 20_000 },
    );
    expect(stdout).toBe('done');
    const store = await SqliteStore.open({ path, checkpoint: 'inline' });
    stores.push(store);
    expect((await store.getThread('t1'))?.messageCount).toBe(20);
  });

  it('reports a checkpointer that cannot open its file once, without an uncaught error, and still stops', async () => {
    const failures: unknown[] = [];
    const checkpointer = new BackgroundCheckpointer({
      file: join(directory, 'missing', 'x.db'),
      synchronous: 'NORMAL',
      intervalMs: 10,
      idleIntervalMs: 10,
      onFailure: (error) => failures.push(error),
    });
    await until(() => failures.length > 0);
    await checkpointer.stop();
    expect(failures).toEqual([
      expect.objectContaining({ message: expect.stringContaining('directory does not exist') }),
    ]);
  });

  it('rejects an unknown checkpoint mode', () => {
    expect(() => new SqliteStore({ path: join(directory, 'x.db'), checkpoint: 'never' as 'inline' })).toThrow(
      expect.objectContaining({ code: 'invalid-argument' }) as unknown as LunationError,
    );
  });
});
