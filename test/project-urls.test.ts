/** How an adapter turns the URL an engine would fetch into its index path, and back (core/page/project-urls.ts). */
import { asFolder, folderOf, MisrootedFiles, projectPathOf, relativeRoot, rootThatWouldMatch, urlOfPath } from '../core/internal.js';

const root = new URL('https://games.example/harbor/published/');
const path = (url: string) => projectPathOf(new URL(url, 'https://games.example/harbor/index.html'), root);

test('URLs below the root map to the project path they spell', () => {
  expect(path('published/assets/crate.png')).toBe('assets/crate.png');
  expect(path('./published/./assets/../assets/crate.png')).toBe('assets/crate.png');
  expect(path('/harbor/published/assets/crate.png?v=3#top')).toBe('assets/crate.png');
  expect(path('published/sounds/sea%20waves.ogg')).toBe('sounds/sea waves.ogg');
  expect(path('published/sounds/sea waves.ogg')).toBe('sounds/sea waves.ogg');
  expect(path('published/%C3%A9t%C3%A9.json')).toBe('été.json');
});

test('URLs elsewhere, or that cannot spell a safe path, map to nothing', () => {
  expect(path('assets/crate.png')).toBeUndefined();
  expect(path('https://cdn.example/harbor/published/assets/crate.png')).toBeUndefined();
  expect(path('published/')).toBeUndefined();
  expect(path('published/a%2Fb.png')).toBeUndefined();
  expect(path('published/a//b.png')).toBeUndefined();
  expect(path('published/%E0%A4%A.png')).toBeUndefined();
});

test('the default root is the folder of the index URL; a given root is a folder itself', () => {
  expect(asFolder(new URL('https://games.example/harbor/published?v=2')).href).toBe('https://games.example/harbor/published/');
  expect(asFolder(new URL('https://games.example/harbor/published/')).href).toBe('https://games.example/harbor/published/');
  expect(folderOf(new URL('https://games.example/harbor/published/project.index.json?v=2')).href).toBe(
    'https://games.example/harbor/published/',
  );
  expect(folderOf(new URL('https://games.example/harbor/')).href).toBe('https://games.example/harbor/');
});

test('urlOfPath is the way back: each segment encoded as the publish step writes it', () => {
  expect(urlOfPath('sounds/sea waves.ogg', root)).toBe('https://games.example/harbor/published/sounds/sea%20waves.ogg');
  expect(path(urlOfPath('models/Box Textured/a#b.gltf', root))).toBe('models/Box Textured/a#b.gltf');
});

describe("a root that does not match the game's URLs (assets/… loaded, the index in published/)", () => {
  const listed = new Set(['atlas/emoji.png', 'atlas/emoji.json', 'sounds/sea waves.ogg', 'logo.png']);
  const has = (path: string) => listed.has(path);
  const page = new URL('https://games.example/harbor/index.html');
  const at = (url: string) => new URL(url, page);

  test('rootThatWouldMatch: the folder below which the URL names a listed path, the longest tail first', () => {
    expect(rootThatWouldMatch(at('assets/atlas/emoji.png'), has)?.href).toBe('https://games.example/harbor/assets/');
    expect(rootThatWouldMatch(at('assets/sounds/sea%20waves.ogg?v=2'), has)?.href).toBe('https://games.example/harbor/assets/');
    expect(rootThatWouldMatch(at('/logo.png'), has)?.href).toBe('https://games.example/');
    expect(rootThatWouldMatch(at('assets/atlas/other.png'), has)).toBeUndefined();
    expect(rootThatWouldMatch(new URL('blob:https://games.example/0b1f'), has)).toBeUndefined();
  });

  test('relativeRoot: relative to the base when below it, else an absolute path on the same origin', () => {
    const base = new URL('https://games.example/harbor/');
    expect(relativeRoot(new URL('https://games.example/harbor/assets/'), base)).toBe('assets/');
    expect(relativeRoot(new URL('https://games.example/harbor/'), base)).toBe('./');
    expect(relativeRoot(new URL('https://games.example/shared/assets/'), base)).toBe('/shared/assets/');
    expect(relativeRoot(new URL('https://cdn.example/assets/'), base)).toBeUndefined();
  });

  function watch(root: string) {
    const warnings: string[] = [];
    const pending: (() => void)[] = [];
    const misrooted = new MisrootedFiles({
      root: new URL(root),
      has,
      indexUrl: 'https://games.example/harbor/published/project.index.json',
      relativeTo: new URL('https://games.example/harbor/'),
      warn: (message) => warnings.push(message),
      schedule: (callback) => pending.push(callback),
    });
    const settle = () => pending.splice(0).forEach((callback) => callback());
    return { misrooted, warnings, settle };
  }

  test('one warning for all the files noticed together, naming the root that would serve them', () => {
    const { misrooted, warnings, settle } = watch('https://games.example/harbor/published/');
    for (const url of [
      'assets/atlas/emoji.png',
      'assets/atlas/emoji.json',
      'assets/atlas/emoji.png',
      'assets/sounds/sea%20waves.ogg',
      'music/unlisted.ogg',
    ])
      misrooted.notice(at(url));
    settle();
    expect(warnings).toEqual([
      "awake-bundle: 3 files under https://games.example/harbor/assets/ load loose, but the index https://games.example/harbor/published/project.index.json lists them below its root https://games.example/harbor/published/; set root: 'https://games.example/harbor/assets/' (or 'assets/') to serve them from bundles",
    ]);
    // Once per index.
    misrooted.notice(at('assets/logo.png'));
    settle();
    expect(warnings).toHaveLength(1);
  });

  test('no warning for loose files the index does not list', () => {
    const { misrooted, warnings, settle } = watch('https://games.example/harbor/assets/');
    misrooted.notice(at('music/unlisted.ogg'));
    misrooted.notice(at('assets/atlas/other.png'));
    settle();
    expect(warnings).toEqual([]);
  });
});
