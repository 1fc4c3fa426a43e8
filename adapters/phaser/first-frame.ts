/**
 * The game's first frame waits for its first load's requests. Phaser boots a
 * scene's `preload` in the task that starts its loop, and the loop's first frame follows at once:
 * measured in Chromium (BENCHMARKS.md, "Start"), that frame is a 170–240 ms task (shaders, the
 * first upload), and the index's answer, even one already preloaded, is read only after it. So a
 * bundled game's first bundle requests went out 200–300 ms after the adapter's call, where loose
 * files were asked for before that frame. An `awkbIndex` added before the game's first frame holds
 * that frame (its `step`, update and render) until the index has opened and the load it starts has
 * sent its requests, or HOLD_MAX_MS have passed (the option's number of ms, if it is one); the
 * frame then renders while the bundles arrive. A second index added meanwhile joins the hold (its
 * own limit does not extend it).
 *
 * Only the first frame, only while the loop has not started: a load later in a game never holds
 * a frame. A headless game has nothing to hold. `holdFirstFrame: false` turns it off.
 */
import type { PhaserGame } from './phaser-shapes.js';

/** At most this long: a slow index lets the game show its first frame (its loading bar, say) after that. */
export const HOLD_MAX_MS = 500;

interface Hold {
  /** Settles the hold: the first frame may render. */
  release(): void;
  /** What the hold waits for, besides the time limit. */
  waits: Set<Promise<unknown>>;
}

const holds = new WeakMap<PhaserGame, Hold>();

/** Holds `game`'s first frame until `until` settles (and the microtasks it starts have run), at most `maxMs`. */
export function holdFirstFrame(game: PhaserGame, until: Promise<unknown>, maxMs = HOLD_MAX_MS): void {
  const existing = holds.get(game);
  if (existing) {
    existing.waits.add(until);
    return;
  }
  const loop = game.loop;
  // Started already (its step is bound), headless (no frame to hold), or past its first frame.
  if (!loop || loop.running || (loop.frame ?? 0) > 0 || !game.renderer || typeof game.step !== 'function') return;
  const own = game.step;
  let holding = true;
  // Game#start binds `step` into the loop after the first scene's preload, so the bound one is this.
  game.step = function (this: PhaserGame, ...args: unknown[]) {
    if (holding) return undefined;
    return own.apply(this, args);
  };
  const timer = setTimeout(() => hold.release(), maxMs);
  const hold: Hold = {
    waits: new Set([until]),
    release() {
      if (!holding) return;
      holding = false;
      clearTimeout(timer);
    },
  };
  holds.set(game, hold);
  // In a task of its own: after the microtasks the opening started (the files' routing, the load's
  // plan and its `fetch` calls) have run.
  void settleAll(hold).then(() => setTimeout(() => hold.release(), 0));
}

/** Every wait of the hold, including those added while it waits. */
async function settleAll(hold: Hold): Promise<void> {
  let seen = 0;
  while (seen < hold.waits.size) {
    seen = hold.waits.size;
    await Promise.allSettled([...hold.waits]);
  }
}
