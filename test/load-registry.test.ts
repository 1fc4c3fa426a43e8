/**
 * The load registry on its own (core/read/load/load-registry.ts): one load per bundle shared by
 * every read that needs it (SPEC §7 "One request per bundle"), its status one of gathering →
 * planning → fetching → storing → done | failed, its progress on the scale it planned (SPEC §7
 * "Byte progress"), and a load every party gave up on stopped and gone.
 */
import { decided, LoadRegistry, over, type Load, type LoadStatus } from '../core/read/load/load-registry.js';

function deferred<T = void>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

describe('a load’s status', () => {
  test('planning, then fetching once it decides (its bytes final), then done; waiters resolve', async () => {
    const registry = new LoadRegistry(new AbortController().signal, () => undefined);
    const run = deferred();
    let decide!: (bytes: number) => void;
    const load = registry.start('bundle', 1000, async (_load, d) => {
      decide = d;
      await run.promise;
    });
    const seen: LoadStatus[] = [load.status];
    expect([decided(load), over(load)]).toEqual([false, false]);
    decide(400);
    decide(999); // decided once: the second is ignored
    seen.push(load.status);
    await expect(load.planned).resolves.toBe(400);
    expect(load.fetchBytes).toBe(400);
    const waiting = registry.join(load, new AbortController().signal);
    run.resolve();
    await waiting;
    seen.push(load.status);
    expect(seen).toEqual(['planning', 'fetching', 'done']);
    expect([decided(load), over(load), load.receivedBytes, registry.size]).toEqual([true, true, 400, 0]);
  });

  test('a load that fails is failed with its error, which every waiting read gets; one that failed before deciding still settles `planned`', async () => {
    const registry = new LoadRegistry(new AbortController().signal, () => undefined);
    const failure = new Error('bundle refused');
    const run = deferred();
    const load = registry.start('bundle', 1000, () => run.promise);
    const arrival = registry.arrival(load, 'member', new AbortController().signal);
    run.reject(failure);
    await expect(arrival).rejects.toBe(failure);
    await expect(load.planned).resolves.toBe(1000);
    expect([load.status, load.error, over(load)]).toEqual(['failed', failure, true]);
    await expect(registry.arrival(load, 'other', new AbortController().signal)).rejects.toBe(failure);
  });

  test('a content that arrived wakes only its own waiters; one arriving twice (a retry) wakes nobody again', async () => {
    const registry = new LoadRegistry(new AbortController().signal, () => undefined);
    const run = deferred();
    let theLoad!: Load;
    registry.start('bundle', 10, async (load) => {
      theLoad = load;
      await run.promise;
    });
    const woken: string[] = [];
    const signal = new AbortController().signal;
    const a = registry.arrival(theLoad, 'a', signal).then(() => woken.push('a'));
    void registry.arrival(theLoad, 'b', signal).then(() => woken.push('b'));
    registry.arrive(theLoad, 'a');
    registry.arrive(theLoad, 'a');
    await a;
    expect(woken).toEqual(['a']);
    expect(registry.wakeups).toBe(1);
    run.resolve();
  });

  test('progress stays on the planned scale and never goes back', async () => {
    const registry = new LoadRegistry(new AbortController().signal, () => undefined);
    const run = deferred();
    const load = registry.start('bundle', 1000, () => run.promise);
    registry.progress(load, 50, 100); // an attempt of 100 bytes, half done: half the planned 1000
    expect(load.receivedBytes).toBe(500);
    registry.progress(load, 10, 100); // a new attempt starts over: progress does not go back
    expect(load.receivedBytes).toBe(500);
    registry.progress(load, 5000, 1000);
    expect(load.receivedBytes).toBe(1000);
    run.resolve();
  });

  test('every party gave up: the load is aborted and leaves at once, so the next read starts anew', async () => {
    const idle = jest.fn();
    const registry = new LoadRegistry(new AbortController().signal, idle);
    const load = registry.start(
      'bundle',
      10,
      (l) => new Promise((_, reject) => l.controller.signal.addEventListener('abort', () => reject(l.controller.signal.reason))),
    );
    const first = new AbortController();
    const second = new AbortController();
    const joins = [registry.join(load, first.signal), registry.join(load, second.signal)];
    first.abort(new Error('first gave up'));
    await expect(joins[0]).rejects.toThrow('first gave up');
    expect([load.controller.signal.aborted, registry.get('bundle')]).toEqual([false, load]);
    second.abort(new Error('second gave up'));
    await expect(joins[1]).rejects.toThrow('second gave up');
    expect([load.controller.signal.aborted, registry.get('bundle'), registry.size]).toEqual([true, undefined, 0]);
    expect(idle).toHaveBeenCalledTimes(1);
  });
});
