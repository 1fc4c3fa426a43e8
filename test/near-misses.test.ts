/**
 * The near-miss warning on its own (core/page/near-misses.ts): a file below the root that the
 * index does not list loads loose; when a listed path is a slip away from its path, one warning
 * per path names that path, off the engine's request (a task later). A path with none near it
 * is taken as loose on purpose: nothing is said. The adapters' part is tested in Chromium and
 * Firefox ESR (phaser-adapter, babylon-adapter).
 */
import { NearMisses } from '../core/page/near-misses.js';
import { nearestPath } from '../core/page/nearest-path.js';

const LISTED = [
  'assets/images/backgrounds/background-1.png',
  'assets/images/backgrounds/background-2.png',
  'assets/models/CesiumMilkTruck.gltf',
  'assets/models/CesiumMilkTruck.bin',
  'assets/audio/Theme.ogg',
  'assets/ui/buttons/play.png',
  'levels/level-1.json',
  'levels/level-10.json',
];

describe('nearestPath', () => {
  test.each([
    ['a letter missing', 'assets/images/backgrounds/backgrond-1.png', 'assets/images/backgrounds/background-1.png'],
    ['a letter missing in a model', 'assets/models/CesiumMilkTruk.gltf', 'assets/models/CesiumMilkTruck.gltf'],
    ['letters swapped', 'assets/images/backgrounds/backgorund-2.png', 'assets/images/backgrounds/background-2.png'],
    ['another letter case', 'assets/audio/theme.OGG', 'assets/audio/Theme.ogg'],
    ['the same file name in another folder', 'assets/play.png', 'assets/ui/buttons/play.png'],
    ['the nearest of two near ones', 'levels/level-11.json', 'levels/level-1.json'],
    ['two letters swapped in a short name', 'assets/ui/buttons/paly.png', 'assets/ui/buttons/play.png'],
  ])('%s: %s → %s', (_, path, expected) => {
    expect(nearestPath(path, LISTED)).toBe(expected);
  });

  test.each([
    ['a file of its own', 'assets/config/settings.json'],
    ['too many letters apart for its length', 'levels/lvl-9.json'],
    ['a file name listed in two folders', 'other/background-1.png'],
  ])('none near: %s (%s)', (_, path) => {
    const twice = [...LISTED, 'extra/background-1.png'];
    expect(nearestPath(path, twice)).toBeUndefined();
  });

  test('an index of 100,000 paths is searched once per path, in well under a second', () => {
    const many = Array.from({ length: 100_000 }, (_, i) => `tiles/set-${i % 50}/tile-${i}.png`);
    const started = performance.now();
    expect(nearestPath('tiles/set-3/tlie-53.png', many)).toBe('tiles/set-3/tile-53.png');
    // Not a timing assertion: that the search returns is what the test checks; the time is printed for a reader.
    console.log(`nearestPath over 100,000 paths: ${(performance.now() - started).toFixed(0)} ms`);
  });
});

describe('NearMisses', () => {
  function watch(root = 'https://games.example/game/') {
    const warnings: string[] = [];
    const tasks: (() => Promise<void>)[] = [];
    const misses = new NearMisses({
      root: new URL(root),
      has: (path) => LISTED.includes(path),
      paths: () => LISTED,
      indexUrl: `${root}project.index.json`,
      warn: (message) => warnings.push(message),
      schedule: (callback) => tasks.push(callback),
    });
    const settle = () => Promise.all(tasks.splice(0).map((task) => task()));
    return { misses, warnings, settle, at: (path: string) => new URL(path, root) };
  }

  test('one warning per path, naming the path, the root, the index and the listed path it is a slip from', async () => {
    const { misses, warnings, settle, at } = watch();
    misses.notice(at('assets/models/CesiumMilkTruk.gltf'));
    misses.notice(at('assets/models/CesiumMilkTruk.gltf'));
    expect(warnings).toEqual([]); // told a task later, off the engine's request
    await settle();
    misses.notice(at('assets/models/CesiumMilkTruk.gltf'));
    await settle();
    expect(warnings).toEqual([
      'awake-bundle: assets/models/CesiumMilkTruk.gltf is below the root https://games.example/game/ but not in the index https://games.example/game/project.index.json; did you mean assets/models/CesiumMilkTruck.gltf? Loading it loose',
    ]);
  });

  test('nothing for listed paths, paths outside the root, or loose files with no listed path near them', async () => {
    const { misses, warnings, settle, at } = watch();
    misses.notice(at('assets/models/CesiumMilkTruck.gltf'));
    misses.notice(new URL('https://games.example/other/assets/models/CesiumMilkTruk.gltf'));
    misses.notice(at('config/settings.json'));
    misses.notice(at('./'));
    await settle();
    expect(warnings).toEqual([]);
  });

  test('at most 64 paths are looked into: a game loading many files loose below the root on purpose pays for no more', () => {
    const { at } = watch();
    let looked = 0;
    const counting = new NearMisses({
      root: new URL('https://games.example/game/'),
      has: () => false,
      paths: () => LISTED,
      warn: () => undefined,
      schedule: () => {
        looked++;
      },
    });
    for (let i = 0; i < 500; i++) counting.notice(at(`loose/file-${i}.png`));
    expect(looked).toBe(64);
  });
});
