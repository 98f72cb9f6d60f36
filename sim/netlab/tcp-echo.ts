/**
 * TCP across the lab: an echo server in one namespace (a lab program, stopped at teardown) and
 * one request from another (tcp-echo-program.ts), read back strictly: the reply carries the
 * line sent and the addresses each end saw.
 */
import { fileURLToPath } from 'node:url';
import type { ComponentProcess } from '../cluster/component-process.ts';
import { runInNetns } from './command.ts';
import type { NetLab } from './net-lab.ts';
import { waitForLogLine } from './netns-process.ts';

const program = fileURLToPath(new URL('./tcp-echo-program.ts', import.meta.url));

/** Starts an echo server on 0.0.0.0:`port` in `netns` and resolves once it listens. */
export async function startEchoServer(
  lab: NetLab,
  netns: string,
  port: number,
): Promise<ComponentProcess> {
  const proc = lab.start({
    netns,
    name: `tcp-echo ${netns}:${port}`,
    file: process.execPath,
    args: [program, 'server', '--port', String(port)],
  });
  await waitForLogLine(proc, /^echo listening on /, {
    description: 'echo listening',
    timeoutMs: 15_000,
  });
  return proc;
}

export interface EchoAnswer {
  /** The client's own address for the connection. */
  clientAddress: string;
  /** The address the server saw the connection come from. */
  seenFrom: string;
  /** The server's address for the connection. */
  serverAddress: string;
  line: string;
}

function stringField(object: unknown, key: string, what: string): string {
  const value = (object as Record<string, unknown> | null)?.[key];
  if (typeof value !== 'string' || value === '')
    throw new Error(`${what}: no ${key} in ${JSON.stringify(object)}`);
  return value;
}

/** Sends `message` from `netns` to host:port and returns what both ends saw. */
export async function echoRequest(
  netns: string,
  target: { host: string; port: number },
  message: string,
  timeoutMs = 5000,
): Promise<EchoAnswer> {
  const what = `TCP echo ${netns} → ${target.host}:${target.port}`;
  const { stdout } = await runInNetns(
    netns,
    process.execPath,
    [
      program,
      'client',
      '--host',
      target.host,
      '--port',
      String(target.port),
      '--message',
      message,
      '--timeout-ms',
      String(timeoutMs),
    ],
    { timeoutMs: timeoutMs + 10_000 },
  );
  let outer: unknown;
  let reply: unknown;
  try {
    outer = JSON.parse(stdout);
    reply = JSON.parse(stringField(outer, 'reply', what));
  } catch (error) {
    throw new Error(
      `${what}: unreadable answer ${JSON.stringify(stdout)}: ${(error as Error).message}`,
    );
  }
  return {
    clientAddress: stringField(outer, 'local', what),
    seenFrom: stringField(reply, 'from', what),
    serverAddress: stringField(reply, 'to', what),
    line: stringField(reply, 'line', what),
  };
}
