#!/usr/bin/env node
/**
 * The `winfleet` and `kubectl-winfleet` executable: runs the command line (program.ts). Kept free
 * of top-level await and import.meta so that it bundles into the CommonJS single executable the
 * krew archive ships (scripts/build-cli.ts).
 */
import { runCli } from './program.ts';

void runCli(process.argv).then((code) => {
  process.exitCode = code;
});
