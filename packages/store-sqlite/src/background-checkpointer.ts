import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

export interface BackgroundCheckpointerOptions {
  /** The database file (in WAL mode) to checkpoint. */
  file: string;
  /** The `synchronous` level of the store's connection; the checkpointer's connection uses the same. */
  synchronous: 'NORMAL' | 'FULL';
  /** How long the checkpointer waits between passive checkpoints while the log grows. */
  intervalMs: number;
  /** The longest wait, reached by doubling while nothing is written. */
  idleIntervalMs: number;
  /** Called once if the checkpointer stops on its own (it could not open the file, or a checkpoint failed). */
  onFailure: (error: unknown) => void;
}

// The worker runs as an inline CommonJS script (no file of its own to resolve, from `src` under vitest/tsx or
// from `dist`) and loads better-sqlite3 from the path this module resolves. Busy results of a passive
// checkpoint are normal (what it could not copy waits for the next tick), and so are SQLITE_BUSY and
// SQLITE_LOCKED errors; any other error stops it.
// It checkpoints every intervalMs while the log grows and backs off to idleIntervalMs while nothing is written.
const workerSource = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
let db;
let timer;
function stop(error) {
  clearTimeout(timer);
  timer = undefined;
  try { db?.close(); } catch {}
  db = undefined;
  if (error !== undefined) parentPort.postMessage({ type: 'failed', message: String(error?.message ?? error), code: error?.code });
  parentPort.close();
}
parentPort.on('message', (message) => { if (message === 'stop') stop(); });
try {
  db = new Database(workerData.file, { fileMustExist: true });
  db.pragma('synchronous = ' + workerData.synchronous);
  const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
  let delay = workerData.intervalMs;
  let lastLog = -1;
  const tick = () => {
    let row;
    try {
      row = checkpoint.get();
    } catch (error) {
      // Locked out for now (another process recovering the log, say): try again on the next tick.
      if (!/^SQLITE_(BUSY|LOCKED)/.test(String(error?.code))) {
        stop(error);
        return;
      }
      row = { busy: 1 };
    }
    const idle = row.busy === 0 && row.checkpointed === row.log && row.log === lastLog;
    lastLog = row.log;
    delay = idle ? Math.min(delay * 2, workerData.idleIntervalMs) : workerData.intervalMs;
    if (db) timer = setTimeout(tick, delay);
  };
  timer = setTimeout(tick, delay);
} catch (error) {
  stop(error);
}
`;

/**
 * Runs `PRAGMA wal_checkpoint(PASSIVE)` on its own connection in a worker thread, so the copying of WAL frames
 * into the database file and the fsyncs that go with it stay off the thread that commits.
 */
export class BackgroundCheckpointer {
  readonly #worker: Worker;
  readonly #exited: Promise<void>;

  constructor(options: BackgroundCheckpointerOptions) {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    this.#worker = new Worker(workerSource, {
      eval: true,
      workerData: {
        driver,
        file: options.file,
        synchronous: options.synchronous,
        intervalMs: options.intervalMs,
        idleIntervalMs: options.idleIntervalMs,
      },
      stdout: false,
      stderr: false,
    });
    let failed = false;
    const fail = (error: unknown) => {
      if (failed) return;
      failed = true;
      options.onFailure(error);
    };
    this.#worker.on('message', (message: { type: string; message: string; code?: string }) => {
      if (message?.type === 'failed') {
        fail(Object.assign(new Error(message.message), message.code ? { code: message.code } : {}));
      }
    });
    this.#exited = new Promise((resolve) => {
      this.#worker.once('exit', (code) => {
        if (code !== 0) fail(new Error(`The SQLite checkpointer thread exited with code ${code}`));
        resolve();
      });
    });
    // Without a listener an uncaught error in the worker would be rethrown in this thread; 'exit' follows it.
    this.#worker.on('error', fail);
    // After the listeners: a 'message' listener refs the worker's port again.
    this.#worker.unref();
  }

  /** Stops the worker after its current checkpoint, closes its connection and waits for the thread to end. */
  async stop(): Promise<void> {
    // Referenced again, or a process with nothing else to do would exit before `close()` resolves.
    this.#worker.ref();
    this.#worker.postMessage('stop');
    await this.#exited;
  }
}
