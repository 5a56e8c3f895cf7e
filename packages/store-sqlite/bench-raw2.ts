import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
const dir = mkdtempSync(join(tmpdir(), 'lunation-raw-'));
function time(label: string, n: number, f: (i: number) => void) { for (let i = 0; i < 2000; i++) f(i); const t = process.hrtime.bigint(); for (let i = 0; i < n; i++) f(i); console.log(label, (Number(process.hrtime.bigint() - t) / n / 1000).toFixed(2), 'µs'); }
const msg = JSON.stringify({ id: 'a', role: 'assistant', content: [{ type: 'text', text: 'hello '.repeat(40) }] });
for (const variant of ['rowid', 'without rowid']) {
  const db = new Database(join(dir, `${variant}.db`));
  db.pragma('journal_mode = WAL'); db.pragma('synchronous = NORMAL');
  db.exec(`CREATE TABLE m (thread_id TEXT, seq INTEGER, message TEXT, run_id TEXT, created_at INTEGER, PRIMARY KEY (thread_id, seq)) ${variant === 'rowid' ? '' : 'WITHOUT ROWID'}`);
  const begin = db.prepare('BEGIN IMMEDIATE'), commit = db.prepare('COMMIT');
  const ins1 = db.prepare('INSERT INTO m VALUES (?, ?, ?, ?, ?)');
  const ins2 = db.prepare('INSERT INTO m VALUES (?, ?, ?, ?, ?), (?, ?, ?, ?, ?)');
  let seq = 0;
  time(`${variant}: 2 single inserts`, 10000, () => { begin.run([]); ins1.run(['t1', ++seq, msg, 'r', 1]); ins1.run(['t1', ++seq, msg, 'r', 1]); commit.run([]); });
  time(`${variant}: 1 two-row insert`, 10000, () => { begin.run([]); ins2.run(['t1', ++seq, msg, 'r', 1, 't1', ++seq, msg, 'r', 1]); commit.run([]); });
}
