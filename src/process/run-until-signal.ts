/** Keeps a foreground command alive until Ctrl-C (SIGINT) or SIGTERM, then cleans up. */

/** Resolves after the first SIGINT/SIGTERM has run `cleanup`; a second signal exits at once. */
export function runUntilSignal(cleanup: () => Promise<void>): Promise<void> {
  return new Promise((resolve) => {
    // Signal handlers alone do not keep Node.js running.
    const keepAlive = setInterval(() => {}, 1 << 30);
    let stopping = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (stopping) {
        process.stderr.write(`\n${signal} again: exiting now\n`);
        process.exit(130);
      }
      stopping = true;
      process.stderr.write(`\n${signal}: stopping…\n`);
      cleanup()
        .finally(() => clearInterval(keepAlive))
        .then(resolve, (error: unknown) => {
          process.stderr.write(`Cleanup failed: ${(error as Error).message}\n`);
          process.exitCode = 1;
          resolve();
        });
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
}
