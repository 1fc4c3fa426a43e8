import { compareKeys, sha256Hex, opaqueId } from '../core/index.js';

test('core loads under jest', async () => {
  expect(compareKeys('a', 'b')).toBe(-1);
  expect(await sha256Hex(new Uint8Array())).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  expect(opaqueId('s', 'p')).toHaveLength(64);
});
