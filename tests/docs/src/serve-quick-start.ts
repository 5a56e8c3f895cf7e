// Serves the quick start's model until stdin closes; prints its base URL as the first line.
// Used by scripts/check-install.sh, which runs the packed quick start against it.
import { startQuickStartServer } from './quick-start-server.js';

const server = await startQuickStartServer();
process.stdout.write(`${server.baseURL}\n`);
process.stdin.resume().on('end', () => void server.close());
