/**
 * The public API: what `awake-bundle` exports, by name, values and types (read with the
 * TypeScript compiler from core/index.ts, as a game's editor sees it). A name added or dropped
 * here is a change to the package's contract: say so in the README. Format and publish helpers
 * are `awake-bundle/format` (and `awake-bundle/node`), never the game's entry.
 */
import { join } from 'node:path';
import ts from 'typescript';
import * as format from '../core/format-entry.js';
import * as publicApi from '../core/index.js';

const REPO = join(__dirname, '..');

function exportedNames(file: string): string[] {
  const program = ts.createProgram([file], {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    skipLibCheck: true,
    noEmit: true,
  });
  const checker = program.getTypeChecker();
  const module = checker.getSymbolAtLocation(program.getSourceFile(file)!)!;
  return checker
    .getExportsOfModule(module)
    .map((symbol) => {
      const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
      return `${target.flags & ts.SymbolFlags.Value ? '' : 'type '}${symbol.name}`;
    })
    .sort();
}

test('awake-bundle exports what a game uses, and nothing else', () => {
  expect(exportedNames(join(REPO, 'core/index.ts'))).toEqual([
    'AssetNotFoundError',
    'AwakeError',
    'BundleFormatError',
    'BundleIntegrityError',
    'CacheStorageCache',
    'DEFAULT_BROWSER_CACHE_NAME',
    'FallbackCache',
    'FileIntegrityError',
    'HttpError',
    'IndexTooLargeError',
    'IndexValidationError',
    'IndexedAssetSource',
    'IndexedDBCache',
    'InvalidOptionError',
    'MemberDecodeError',
    'MemoryCache',
    'NetworkError',
    'OpfsCache',
    'OriginNotAllowedError',
    'RangeResponseError',
    'ReadStalledError',
    'RequestAbortedError',
    'RequestTimeoutError',
    'ResponseSizeError',
    'TokenOriginError',
    'UnsafePathError',
    'UnsupportedIndexVersionError',
    'UnsupportedOperationError',
    'bindTokenOrigin',
    'createBrowserCache',
    'isAwakeError',
    'openBrowserCache',
    'sha256Hex',
    'tokenAuthorizedFetch',
    'type AnyAwakeError',
    'type AwakeErrorCode',
    'type AwakeErrorDetails',
    'type BrowserCacheBackend',
    'type BrowserCacheOptions',
    'type BrowserStorageCache',
    'type BundleEntry',
    'type BundlePart',
    'type BundledFileEntry',
    'type BundledIndex',
    'type CacheErrorDetail',
    'type ClearableContentCache',
    'type ContentCache',
    'type DeltaReadOptions',
    'type DoubleDownloadsOptions',
    'type FallbackCacheOptions',
    'type FileProgress',
    'type LoadOptions',
    'type LooseFileEntry',
    'type LooseIndex',
    'type MemberDecodeProblem',
    'type MemoryCacheOptions',
    'type NeededBytesOptions',
    'type OpenBrowserCacheOptions',
    'type OpenOptions',
    'type PrefetchOptions',
    'type PrefetchProgress',
    'type ProjectIndex',
    'type RangeReadOptions',
    'type ReadOptions',
    'type ReadState',
    'type RetryEvent',
    'type RetryOptions',
    'type SourceStats',
    'type TokenAuthorizedFetchOptions',
    'type TransportOptions',
    'watchDoubleDownloads',
  ]);
  // The values as a bundler sees them (no type is a value by mistake).
  expect(Object.keys(publicApi).sort()).toEqual(exportedNames(join(REPO, 'core/index.ts')).filter((name) => !name.startsWith('type ')));
});

test('awake-bundle/format has the format and publish helpers that left the game entry', () => {
  for (const name of [
    'BundleWriter',
    'decodeBundle',
    'encodeBundle',
    'groupByFolder',
    'serializeIndex',
    'parseProjectIndexJson',
    'diffProjectIndexes',
    'opaqueId',
    'verifyBundle',
    'sha256HexSync',
  ])
    expect(typeof (format as Record<string, unknown>)[name]).toBe('function');
  for (const name of ['BundleWriter', 'decodeBundle', 'WorkerDigestPool', 'acceptBundle', 'HEADER_BYTES', 'rangesOf'])
    expect(name in publicApi).toBe(false);
});
