/**
 * The content ledger and the members it holds, on their own (core/read/state/): what one source
 * knows of each content besides its cache. Held contents are kept for the reads that will need
 * them, each read owning what it takes, within the `pendingBytes` budget unless pinned by a
 * prefetch or awaited; a content coming by a range or a pending cache write counts as here, so no
 * byte is asked for twice (SPEC §7 "One request per bundle", "Needed bytes").
 */
import { ContentLedger } from '../core/read/state/content-ledger.js';
import { HeldMembers } from '../core/read/state/held-members.js';
import { InvalidOptionError } from '../core/internal.js';
import type { Entry } from '../core/read/open/index-view.js';

const bytesOf = (length: number, fill: number) => new Uint8Array(length).fill(fill);
const file = (path: string, sha256: string): Entry => ({ path, sha256, sizeBytes: 4, bundle: 'b', offset: 0 }) as Entry;

describe('HeldMembers', () => {
  test('the last expected read takes the held buffer itself; earlier ones get copies they own', () => {
    const held = new HeldMembers(1 << 20);
    const bytes = bytesOf(8, 7);
    held.put('a', bytes, 2, 0, 'load-1');
    const first = held.take('a')!;
    expect(first).toEqual(bytes);
    expect(first).not.toBe(bytes);
    first[0] = 0; // the copy is the reader's: the held bytes do not change
    const last = held.take('a')!;
    expect(last).toBe(bytes);
    expect(last[0]).toBe(7);
    expect(held.has('a')).toBe(false);
    expect(held.sizeBytes).toBe(0);
  });

  test('over budget the oldest unpinned content leaves first; pinned and awaited ones stay', () => {
    const held = new HeldMembers(20);
    held.put('pinned', bytesOf(10, 1), 1, 1, 'l');
    held.expect('awaited');
    held.put('awaited', bytesOf(10, 2), 1, 0, 'l');
    held.put('old', bytesOf(10, 3), 1, 0, 'l');
    held.put('new', bytesOf(10, 4), 1, 0, 'l');
    expect(['pinned', 'awaited', 'old', 'new'].filter((sha) => held.has(sha))).toEqual(['pinned', 'awaited']);
    expect(held.sizeBytes).toBe(20);
    expect(held.protectedBytes).toBe(20);
  });

  test('a content nobody expects is not kept at all', () => {
    const held = new HeldMembers(1 << 20);
    held.put('a', bytesOf(4, 1), 0, 0, 'l');
    expect(held.has('a')).toBe(false);
  });

  test('unpin lets the budget apply again; unexpect lets an awaited content go', () => {
    const held = new HeldMembers(1 << 20);
    held.put('a', bytesOf(4, 1), 1, 1, 'l');
    held.unpin('a');
    expect(held.has('a')).toBe(false);
    held.expect('b');
    held.put('b', bytesOf(4, 2), 0, 0, 'l');
    expect(held.has('b')).toBe(true);
    held.unexpect('b');
    expect(held.has('b')).toBe(false);
  });

  test('a failed load lets go of what it brought, unless another source of the same bytes vouches for them', () => {
    const held = new HeldMembers(1 << 20);
    held.put('shared', bytesOf(4, 1), 2, 0, 'bundle-x');
    held.put('shared', bytesOf(4, 1), 2, 0, 'bundle-y');
    held.put('own', bytesOf(4, 2), 1, 0, 'bundle-x');
    held.forget('shared', 'bundle-x');
    held.forget('own', 'bundle-x');
    expect(held.has('shared')).toBe(true);
    expect(held.has('own')).toBe(false);
    held.forget('shared', 'bundle-y');
    expect(held.has('shared')).toBe(false);
  });

  test('a budget that is not a number ≥ 0 is refused, naming pendingBytes', () => {
    expect(() => new HeldMembers(-1)).toThrow(InvalidOptionError);
    expect(() => new HeldMembers(Number.NaN)).toThrow(/pendingBytes/);
  });
});

describe('ContentLedger', () => {
  test('held, on its way by a range, or being written: each counts as here, and brought counts for its bundle only', async () => {
    const ledger = new ContentLedger(1 << 20);
    expect(ledger.has('a')).toBe(false);
    ledger.holdFor('a', bytesOf(4, 1), [file('x.png', 'a')], 'b');
    expect(ledger.has('a')).toBe(true);
    expect(ledger.onItsWay('a')).toBe(false);

    let endRange!: (held: boolean) => void;
    const range = ledger.range('r', new Promise<boolean>((resolve) => (endRange = resolve)));
    expect(ledger.has('r')).toBe(true);
    expect(ledger.onItsWay('r')).toBe(true);
    expect(ledger.ranging('r')).toBe(range);

    let endWrite!: () => void;
    ledger.markWrites(['w'], new Promise<void>((resolve) => (endWrite = resolve)));
    expect(ledger.has('w')).toBe(true);
    expect(ledger.writing('w')).toBeDefined();

    ledger.noteBrought('bundle-1', ['n']);
    expect(ledger.has('n')).toBe(false);
    expect(ledger.had('bundle-1', 'n')).toBe(true);
    expect(ledger.had('bundle-2', 'n')).toBe(false);

    endRange(true);
    endWrite();
    await expect(range).resolves.toBe(true);
    await Promise.resolve();
    expect([ledger.has('r'), ledger.has('w'), ledger.ranging('r'), ledger.writing('w')]).toEqual([false, false, undefined, undefined]);
  });

  test('a later write of a content replaces the earlier one, and the earlier one settling does not unmark it', async () => {
    const ledger = new ContentLedger(1 << 20);
    let endFirst!: () => void;
    ledger.markWrites(['c'], new Promise<void>((resolve) => (endFirst = resolve)));
    const second = new Promise<void>(() => undefined);
    ledger.markWrites(['c'], second);
    endFirst();
    await Promise.resolve();
    await Promise.resolve();
    expect(ledger.writing('c')).toBe(second);
  });

  test('holdFor pins the files a prefetch asked for: they stay past the budget until read', () => {
    const ledger = new ContentLedger(0);
    ledger.asked.add('asked.png');
    ledger.holdFor('p', bytesOf(4, 1), [file('asked.png', 'p'), file('other.png', 'p')], 'b');
    ledger.holdFor('q', bytesOf(4, 2), [file('unasked.png', 'q')], 'b');
    expect([ledger.held.has('p'), ledger.held.has('q')]).toEqual([true, false]);
    expect(ledger.held.protectedBytes).toBe(4);
  });

  test('a prefetch deciding a group: others see it until that group is ended, and a second prefetch does not take it over', async () => {
    const ledger = new ContentLedger(1 << 20);
    const end = ledger.beginDeciding(['g1', 'g2']);
    const decision = ledger.deciding('g1')!;
    expect(decision).toBeDefined();
    const second = ledger.beginDeciding(['g1']);
    second('g1'); // not its group: nothing ends
    expect(ledger.deciding('g1')).toBe(decision);
    end('g1');
    await expect(decision).resolves.toBeUndefined();
    expect([ledger.deciding('g1'), ledger.deciding('g2') !== undefined]).toEqual([undefined, true]);
  });

  test('clear forgets what is held and asked', () => {
    const ledger = new ContentLedger(1 << 20);
    ledger.asked.add('a.png');
    ledger.holdFor('a', bytesOf(4, 1), [file('a.png', 'a')], 'b');
    ledger.clear();
    expect([ledger.asked.size, ledger.held.has('a'), ledger.held.sizeBytes]).toEqual([0, false, 0]);
  });
});
