/**
 * Entry point of winfleet-agent.exe, the agent on each Windows host. scripts/build-agent.ts
 * bundles this file into one CommonJS script and makes it a Node single executable application.
 * Placeholder body: it prints its version and the command it was given; the real commands
 * (bootstrap, run, cleanup, status) replace it.
 *
 * Inside the executable this runs as CommonJS, where top-level await is a syntax error: keep
 * asynchronous work inside functions.
 */
import packageJson from '../../package.json' with { type: 'json' };

const [command, ...args] = process.argv.slice(2);
console.log(`winfleet-agent ${packageJson.version}`);
console.log(`command: ${command ?? '(none)'}${args.length > 0 ? ` ${args.join(' ')}` : ''}`);
