/**
 * Turns of the event loop the reader gives back while it works through many paths or members
 * (a load's lookups, the planner's slices), so that the game's frames and input are not held.
 */

/** The turns waiting for their task, in a page or worker (`nextTurn`), and the channel that gives them one. */
const turnsWaiting: (() => void)[] = [];
let turnChannel: MessageChannel | undefined;

/**
 * A turn of the event loop: a task of its own after what is queued. In Node `setImmediate`
 * (a timer started by a long timer callback can run within the same round); in a page or worker a
 * message to itself, as a timer nested five deep waits at least 4 ms (HTML "timers"); a timer
 * where neither is.
 */
export function nextTurn(): Promise<void> {
  const { setImmediate } = globalThis as { setImmediate?: (run: () => void) => void };
  return new Promise((resolve) => {
    if (setImmediate) return setImmediate(resolve);
    if (typeof MessageChannel !== 'function') return void setTimeout(resolve);
    if (!turnChannel) {
      turnChannel = new MessageChannel();
      turnChannel.port1.onmessage = () => turnsWaiting.shift()?.();
    }
    turnsWaiting.push(resolve);
    turnChannel.port2.postMessage(null);
  });
}
