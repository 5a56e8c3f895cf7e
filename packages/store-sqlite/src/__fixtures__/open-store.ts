// Opens a SqliteStore at argv[2] and prints `{ "ok": true }` or the error's code and message as JSON.
import { LunationError } from '@lunation/contract';
import { SqliteStore } from '../sqlite-store.js';

const path = process.argv[2] as string;
try {
  const store = await SqliteStore.open({ path, checkpoint: 'inline' });
  await store.close();
  process.stdout.write(JSON.stringify({ ok: true }));
} catch (error) {
  const code = LunationError.isInstance(error) ? error.code : 'not-a-lunation-error';
  process.stdout.write(JSON.stringify({ code, message: (error as Error).message }));
}
