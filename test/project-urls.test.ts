/** How an adapter turns the URL an engine would fetch into its index path, and back (core/read/project-urls.ts). */
import { asFolder, folderOf, projectPathOf, urlOfPath } from '../core/index';

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
  expect(folderOf(new URL('https://games.example/harbor/published/project.index.json?v=2')).href).toBe('https://games.example/harbor/published/');
  expect(folderOf(new URL('https://games.example/harbor/')).href).toBe('https://games.example/harbor/');
});

test('urlOfPath is the way back: each segment encoded as the publish step writes it', () => {
  expect(urlOfPath('sounds/sea waves.ogg', root)).toBe('https://games.example/harbor/published/sounds/sea%20waves.ogg');
  expect(path(urlOfPath('models/Box Textured/a#b.gltf', root))).toBe('models/Box Textured/a#b.gltf');
});
