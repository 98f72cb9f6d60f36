/**
 * A TCP socket seen through a slow link: every data chunk, in either direction, is held for
 * the current delay (read on each chunk, so a test can slow a link down mid-transfer) and
 * order is kept. With a zero delay chunks pass straight through. ssh2's server reads the
 * remote address and calls setNoDelay, so those are forwarded.
 */

import type { Socket } from 'node:net';
import { Duplex } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';

export class ThrottledSocket extends Duplex {
  readonly #socket: Socket;
  readonly #delayMs: () => number;
  #inbound: Promise<void> = Promise.resolve();

  constructor(socket: Socket, delayMs: () => number) {
    super({ allowHalfOpen: false });
    this.#socket = socket;
    this.#delayMs = delayMs;
    socket.on('data', (chunk: Buffer) => {
      const delay = this.#delayMs();
      this.#inbound = this.#inbound.then(async () => {
        if (delay > 0) await sleep(delay);
        if (!this.push(chunk)) socket.pause();
      });
    });
    socket.on('end', () => {
      this.#inbound = this.#inbound.then(() => {
        this.push(null);
      });
    });
    socket.on('error', (error) => this.destroy(error));
    socket.on('close', () => {
      this.#inbound.then(() => this.destroy());
    });
  }

  get remoteAddress(): string | undefined {
    return this.#socket.remoteAddress;
  }

  get remoteFamily(): string | undefined {
    return this.#socket.remoteFamily;
  }

  get remotePort(): number | undefined {
    return this.#socket.remotePort;
  }

  setNoDelay(noDelay?: boolean): this {
    this.#socket.setNoDelay(noDelay);
    return this;
  }

  override _read(): void {
    this.#socket.resume();
  }

  override _write(
    chunk: Buffer,
    _encoding: BufferEncoding,
    callback: (error?: Error | null) => void,
  ): void {
    const delay = this.#delayMs();
    if (delay <= 0) {
      this.#socket.write(chunk, callback);
      return;
    }
    setTimeout(() => {
      if (this.#socket.destroyed) callback();
      else this.#socket.write(chunk, callback);
    }, delay);
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.#socket.end(callback);
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.#socket.destroy();
    callback(error);
  }
}
