/**
 * AwkbPlugin, the global plugin Phaser users install through the game config:
 *
 *   plugins: { global: [{ key: 'awkb', plugin: AwkbPlugin, start: true }] }
 *
 * Every scene then has it as `this.awkb` (the `mapping`, `awkb` unless the entry names another),
 * to reach the loaded sources (`this.awkb.source('assets').url('music/theme.ogg')`) and the byte
 * progress of every load (`this.awkb.on('awkbprogress', ({ loadedBytes, totalBytes }, loader) => …)`).
 */
import * as Phaser from 'phaser';
import type { IndexedAssetSource } from '../../core/internal.js';
import { ensureGameState, type AwkbGameState, type ByteProgressListener } from './game-state.js';
import type { PhaserGame, PhaserNamespace } from './phaser-shapes.js';
import { registerAwkb } from './install.js';

export const AWKB_PROGRESS = 'awkbprogress';

export class AwkbPlugin extends Phaser.Plugins.BasePlugin {
  private readonly events = new Phaser.Events.EventEmitter();
  private state: AwkbGameState | undefined;
  private readonly forward: ByteProgressListener = (progress, loader) => this.events.emit(AWKB_PROGRESS, progress, loader);

  constructor(pluginManager: Phaser.Plugins.PluginManager) {
    super(pluginManager);
    registerAwkb(Phaser as unknown as PhaserNamespace);
  }

  override init(): void {
    // Give the scenes `this.awkb` when the config entry names no mapping (PluginManager#addToScene).
    const entry = (this.pluginManager as unknown as { plugins: { plugin: unknown; mapping?: string | null }[] }).plugins.find(
      (e) => e.plugin === this,
    );
    if (entry && !entry.mapping) entry.mapping = 'awkb';
  }

  override start(): void {
    this.state = ensureGameState(this.game as unknown as PhaserGame);
    this.state.progressListeners.add(this.forward);
  }

  override stop(): void {
    this.state?.progressListeners.delete(this.forward);
  }

  /** The source loaded under `key` (the game registry's entry), or the first one loaded. */
  source(key?: string): IndexedAssetSource | undefined {
    return this.state?.source(key);
  }

  on(
    event: typeof AWKB_PROGRESS,
    listener: (progress: { loadedBytes: number; totalBytes: number }, loader: Phaser.Loader.LoaderPlugin) => void,
    context?: unknown,
  ): this {
    this.events.on(event, listener, context);
    return this;
  }

  once(
    event: typeof AWKB_PROGRESS,
    listener: (progress: { loadedBytes: number; totalBytes: number }, loader: Phaser.Loader.LoaderPlugin) => void,
    context?: unknown,
  ): this {
    this.events.once(event, listener, context);
    return this;
  }

  off(event: typeof AWKB_PROGRESS, listener?: (...args: any[]) => void, context?: unknown): this {
    this.events.off(event, listener, context);
    return this;
  }

  override destroy(): void {
    this.stop();
    this.events.destroy();
    super.destroy();
  }
}

/** The source a game keeps under `key` (its registry entry), from a scene or the game. */
export function awkbSource(from: Phaser.Scene | Phaser.Game, key: string): IndexedAssetSource | undefined {
  const game = 'sys' in from ? from.sys.game : from;
  const value = game.registry.get(key) as unknown;
  return isSource(value) ? value : undefined;
}

function isSource(value: unknown): value is IndexedAssetSource {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as IndexedAssetSource).read === 'function' &&
    typeof (value as IndexedAssetSource).url === 'function'
  );
}
