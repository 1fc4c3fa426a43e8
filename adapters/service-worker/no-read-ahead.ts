/**
 * The service worker's stand-in for the reader's read-ahead (core/read/load/read-ahead.ts, with the
 * reference reader and the format parser about 3 KB gzipped, within the worker's 38 KB limit): a
 * service worker answers the page's requests as they come and reads no references ahead.
 * webpack.config.cjs puts it in place of that module.
 */
export class ReadAhead {
  /** A file is being handed out: no references read. */
  handingOut(): void {}

  /** The game asks for a file: nothing started ahead to leave to it. */
  asking(): void {}

  /** Nothing is started ahead. */
  wanted(): boolean {
    return false;
  }
}
