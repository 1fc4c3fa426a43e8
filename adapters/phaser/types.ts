/** Types Phaser's own declarations gain with the adapter: `this.load.awkbIndex`, `this.awkb`. */
import type { AwkbIndexFileConfig, AwkbIndexOptions } from './options.js';
import type { AwkbPlugin } from './plugin.js';

declare global {
  namespace Phaser {
    namespace Loader {
      interface LoaderPlugin {
        /** Loads an awake-bundle project index; files whose URLs it maps then come from its bundles. */
        awkbIndex(key: string | AwkbIndexFileConfig | AwkbIndexFileConfig[], url?: string, options?: AwkbIndexOptions): this;
      }
      interface File {
        /** Why serving this file from a bundle failed (awake-bundle). */
        error?: unknown;
      }
    }
    interface Scene {
      /**
       * The awake-bundle plugin, present only when the game config installs it as a global
       * plugin (`{ key: 'awkb', plugin: AwkbPlugin, start: true }`, mapping `awkb`); undefined
       * otherwise. `awkbSource(this, key)` and `this.load.on('awkbprogress', …)` need no entry.
       */
      awkb?: AwkbPlugin;
    }
  }
}

export {};
