/**
 * What the build plugins (`awake-bundle/webpack`, `awake-bundle/vite`) share: their options,
 * the production publish into the build output, and the development loose index. A plugin only
 * maps these onto its bundler's hooks.
 */
export { resolveBuildOptions, type AwakeBundleBuildOptions, type ResolvedBuildOptions } from './options.js';
export { publishForBuild, type BuildPublishResult } from './publish-for-build.js';
export { LooseDevIndex, LOOSE_FILES_PREFIX, type LooseDevIndexOptions, type Middleware } from './loose-dev-index.js';
export { SERVICE_WORKER_FILE } from '../../core/node/service-worker-file.js';
export { PRELOAD_MARKER, preloadHrefs, preloadLinkAttributes, preloadLinkHtml } from './preload.js';
