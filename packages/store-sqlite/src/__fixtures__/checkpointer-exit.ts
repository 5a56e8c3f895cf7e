// Run in a child process: opens a store on <database path> (background checkpoints), commits a few messages,
// then closes it (`close`) or leaves it open (`open`) and prints `done`. Exiting at all shows that the
// checkpointer thread does not keep the process alive.
// Usage: checkpointer-exit.ts <database path> <close | open>
import { SqliteStore } from '../sqlite-store.js';

const [path, mode] = process.argv.slice(2) as [string, string];
const store = await SqliteStore.open({ path });
await store.createThread({ id: 't1' });
for (let index = 0; index < 20; index += 1) {
  await store.commit({
    threadId: 't1',
    expectedMessageCount: index,
    messages: [{ id: `m${index}`, role: 'user', content: [{ type: 'text', text: 'hello' }] }],
  });
}
if (mode === 'close') await store.close();
process.stdout.write('done');
