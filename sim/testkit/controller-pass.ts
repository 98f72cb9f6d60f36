/**
 * A pass of one of an in-process operator's controllers over a key, awaited: what a test that
 * must show that nothing happens waits for, instead of a sleep. Once the promise resolves, the
 * controller has reconciled the key against the state as it was when the call was made (the
 * work queue's passAfterNow), so anything it would have started is recorded by then.
 */
import type { Operator } from '../../src/operator/operator.ts';

export async function controllerPass(
  operator: Operator,
  controllerName: string,
  key: string,
): Promise<void> {
  const controller = operator.controllers.find((c) => c.name === controllerName);
  if (!controller) {
    const names = operator.controllers.map((c) => c.name).join(', ');
    throw new Error(`The operator runs no controller "${controllerName}" (it runs ${names})`);
  }
  await controller.queue.passAfterNow(key);
}
