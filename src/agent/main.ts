/**
 * Entry point of winfleet-agent.exe, the agent on each Windows host. scripts/build-agent.ts
 * bundles this file into one CommonJS script and makes it a Node single executable
 * application.
 *
 * The `run` command ends when the process is told to stop: Ctrl+C / Ctrl+Break (SIGINT,
 * SIGBREAK), or, under winfleet-service.exe (which sets WINFLEET_STOP_ON_STDIN_EOF=1), its
 * standard input closing: that is how the service shim asks it to stop.
 *
 * Inside the executable this runs as CommonJS, where top-level await is a syntax error: keep
 * asynchronous work inside functions.
 */
import { joinTokenEnv } from '../join/join-command-values.ts';
import { runAgent } from './run-agent.ts';
import { stopWhenInputEnds } from './run-loop.ts';
import { WindowsHostOS } from './windows/windows-host-os.ts';

function main(): void {
  const stop = new AbortController();
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGBREAK'] as const)
    process.on(signal, () => stop.abort());
  const argv = process.argv.slice(2);
  if (argv[0] === 'run') {
    try {
      stopWhenInputEnds(process.stdin, process.env, stop);
    } catch (error) {
      process.stderr.write(`winfleet-agent: ${(error as Error).message}\n`);
      process.exit(2);
    }
  }
  // The join token is read once from the environment and kept from every process the agent
  // starts (they inherit process.env).
  const joinToken = process.env[joinTokenEnv];
  delete process.env[joinTokenEnv];
  runAgent(argv, {
    hostOS: new WindowsHostOS(),
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    signal: stop.signal,
    env: (name) => (name.toUpperCase() === joinTokenEnv ? joinToken : process.env[name]),
  }).then(
    (code) => {
      process.exitCode = code;
      if (argv[0] === 'run') process.exit(code);
    },
    (error: unknown) => {
      process.stderr.write(`winfleet-agent: ${(error as Error).stack ?? error}\n`);
      process.exit(1);
    },
  );
}

main();
