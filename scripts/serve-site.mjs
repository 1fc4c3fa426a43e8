// Serves a built example folder on 127.0.0.1 for the npm scripts (example, demo, demo:babylon)
// until Ctrl-C. The port is PORT (default 8080; 0 for any free one). A busy or invalid port is
// a message saying which port and how to pick another, not a stack trace.
import { join } from 'node:path';

/** Resolves to the server once listening; exits the process (code 1) when it cannot listen. */
export async function serveSite(repo, site, script) {
  const text = process.env.PORT ?? '8080';
  const port = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!(port >= 0 && port <= 65535)) {
    console.error(`${script}: PORT must be an integer from 0 to 65535, got ${JSON.stringify(text)}`);
    process.exit(1);
  }
  const { startStaticServer } = await import(join(repo, 'dist/core/node/index.js'));
  let server;
  try {
    server = await startStaticServer({ root: site, port, host: '127.0.0.1' });
  } catch (error) {
    const why = error?.code === 'EADDRINUSE' ? 'is busy (another program listens on it)' : `cannot be used: ${error?.message ?? error}`;
    console.error(
      `${script}: port ${port} on 127.0.0.1 ${why}. Pick another with PORT, e.g. PORT=8081 npm run ${script} (PORT=0 takes any free port).`,
    );
    process.exit(1);
  }
  const stop = () => server.close().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  return server;
}
