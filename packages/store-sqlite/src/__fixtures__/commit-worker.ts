// Run in a child process: opens (and maybe creates and migrates) the database, creates the thread unless the
// other writer did, appends `count` messages retrying on store-conflict, and prints how many conflicts it met.
// Usage: commit-worker.ts <database path> <thread id> <writer name> <count> <other writer names...>
// With STORE=kysely the store runs on an injected Kysely instance instead of opening the path itself.
import { existsSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { LunationError } from '@lunation/contract';
import Database from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { SqliteStore } from '../sqlite-store.js';

const [path, threadId, writer, count, ...others] = process.argv.slice(2) as [string, string, string, string];
let database: Kysely<unknown> | undefined;
if (process.env.STORE === 'kysely') {
  const client = new Database(path);
  client.pragma('busy_timeout = 5000');
  // Switching to WAL does not wait on the busy timeout: retry while the other process switches it.
  for (let attempt = 0; ; attempt++) {
    try {
      client.pragma('journal_mode = WAL');
      break;
    } catch (error) {
      if ((error as { code?: string }).code !== 'SQLITE_BUSY' || attempt > 500) throw error;
      await sleep(5);
    }
  }
  database = new Kysely<unknown>({ dialect: new SqliteDialect({ database: client }) });
}
const store = await SqliteStore.open(database ? { database } : { path });
await store.createThread({ id: threadId }).catch((error: unknown) => {
  if (!LunationError.hasCode(error, 'store-conflict')) throw error;
});
// Start together: wait until every other writer has opened the database too.
writeFileSync(`${path}.${writer}.ready`, '');
while (!others.every((other) => existsSync(`${path}.${other}.ready`))) await sleep(5);
let conflicts = 0;
for (let index = 0; index < Number(count); index += 1) {
  for (;;) {
    const thread = await store.getThread(threadId);
    try {
      await store.commit({
        threadId,
        expectedMessageCount: thread!.messageCount,
        messages: [{ id: `${writer}-${index}`, role: 'user', content: [{ type: 'text', text: writer }] }],
      });
      break;
    } catch (error) {
      if (!LunationError.hasCode(error, 'store-conflict')) throw error;
      conflicts += 1;
    }
  }
}
await store.close();
await database?.destroy();
process.stdout.write(JSON.stringify({ conflicts }));
