/**
 * Per-file hand-off times of bench/shapes.mjs's Phaser games (phaser-audio, phaser-pack), from
 * navigation start (performance.now()): when each file's bytes were handed to Phaser (its
 * File#onLoad: loose, the XHR's load event; bundled, the adapter's finished XHR,
 * adapters/phaser/serve-file.ts) and when Phaser was done with it (the loader's `filecomplete`:
 * for a sound, after decodeAudioData). One timestamp pushed to an array per event, nothing else:
 * the bench reads `window.exampleHandoff` after the first frame. Imported before the game starts.
 */
import * as Phaser from 'phaser';

/** [type, key, src, ms] per File#onLoad; [type, key, ms] per `filecomplete`. */
type Handoff = { handed: [string, string, string, number][]; done: [string, string, number][] };

const handoff: Handoff = { handed: [], done: [] };
(window as { exampleHandoff?: Handoff }).exampleHandoff = handoff;

type FileProto = { onLoad(this: Phaser.Loader.File, xhr: XMLHttpRequest, event: ProgressEvent): void };
const proto = Phaser.Loader.File.prototype as unknown as FileProto;
const ownOnLoad = proto.onLoad;
proto.onLoad = function (xhr, event) {
  handoff.handed.push([this.type, this.key, String(this.src), performance.now()]);
  ownOnLoad.call(this, xhr, event);
};

/** Records each file's `filecomplete` on `loader` (call in the first scene's preload). */
export function recordCompletes(loader: Phaser.Loader.LoaderPlugin): void {
  loader.on(Phaser.Loader.Events.FILE_COMPLETE, (key: string, type: string) => handoff.done.push([type, key, performance.now()]));
}
