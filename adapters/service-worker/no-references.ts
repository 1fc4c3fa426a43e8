/**
 * The service worker's stand-in for the read-ahead's reference reader (core/read/read-ahead-references.ts,
 * with the format parser about 3 KB gzipped, within the worker's 40 KB limit): a service worker
 * answers the page's requests as they come and reads no references ahead, so every file names none.
 * webpack.config.cjs puts it in place of that module.
 */
export function namedFiles(): string[] {
  return [];
}
