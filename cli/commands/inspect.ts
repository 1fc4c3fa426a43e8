/** `awake-bundle inspect <file.awkb>`: print a bundle's header and members. */
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { BundleFormatError, MemberDecodeError } from '../../core/errors.js';
import { AWKB_MAGIC, memberBytes, storedSizeOf, type BundleRecord } from '../../core/format/awkb.js';
import { decodeBundle } from '../../core/format/awkb-decode.js';
import { sha256HexNode } from '../../core/node/hash.js';
import { decodeMemberNode } from '../../core/node/inflate.js';
import { fileKind, hexStart } from '../file-kind.js';
import { CommandFailure, parseCommandLine, plural, printable, UsageError, type Command } from '../usage.js';

const HELP = `Usage: awake-bundle inspect <file.awkb> [--json]

Prints the bundle's header and its members (key, offset, size, SHA-256; in an AWKB version 2
bundle also the stored size and the encoding, SPEC §5a), checking each member's bytes against its
table record (an encoded member decoded first) and the file's name against its SHA-256.
Exit code 1 when the bundle is malformed or a member is damaged.`;

export const inspectCommand: Command = {
  name: 'inspect',
  summary: "print a bundle's header and members",
  help: HELP,
  async run(argv, { stdout }) {
    const { values, positionals } = parseCommandLine(argv, { json: { type: 'boolean' } });
    if (values.help) {
      stdout.write(`${HELP}\n`);
      return 0;
    }
    if (positionals.length !== 1) throw new UsageError('inspect takes one .awkb file');
    const file = positionals[0]!;
    let bytes: Uint8Array;
    try {
      bytes = await readFile(file);
    } catch (error) {
      throw new CommandFailure(`${file}: cannot read: ${(error as Error).message}`);
    }
    const notABundle = notABundleReason(bytes);
    if (notABundle !== undefined) throw new CommandFailure(`${file} is not an AWKB bundle: ${notABundle}`);
    const sha256 = sha256HexNode(bytes);
    let decoded;
    try {
      decoded = decodeBundle(bytes);
    } catch (error) {
      if (error instanceof BundleFormatError) throw new CommandFailure(`${file}: ${error.message}`);
      throw error;
    }
    const seenContents = new Set<string>();
    const encoded = decoded.version === 2;
    const members: InspectedMember[] = [];
    for (const record of decoded.records) {
      const { key, offset, sizeBytes, sha256: digest, encoding } = record;
      const problem = await memberProblem(bytes, record);
      const copy = seenContents.has(digest);
      seenContents.add(digest);
      // A version 1 bundle's members are listed as before; version 2 adds how each is stored (SPEC §5a).
      const stored = encoded ? { storedBytes: storedSizeOf(record), encoding: encoding ?? 'none' } : {};
      members.push({
        key,
        offset,
        ...stored,
        sizeBytes,
        sha256: digest,
        ok: problem === undefined,
        ...(encoded && problem !== undefined ? { problem } : {}),
        sharesContent: copy,
      });
    }
    const nameMatches = basename(file) === `${sha256}.awkb`;
    const damaged = members.filter((member) => !member.ok);
    if (values.json) {
      stdout.write(
        `${JSON.stringify({ file, sha256, sizeBytes: bytes.length, nameMatches, version: decoded.version, memberCount: decoded.records.length, tableBytes: decoded.dataStart - 16, dataStart: decoded.dataStart, members, damaged: damaged.map((member) => member.key) }, null, 2)}\n`,
      );
    } else {
      // Keys and the file name come from the bundle and the disk: escaped (printable), so a
      // key holding an escape sequence cannot drive the terminal. --json keeps them exact.
      stdout.write(
        `${printable(file)}\n  AWKB version ${decoded.version}, ${plural(decoded.records.length, 'member')}, table ${plural(decoded.dataStart - 16, 'byte')}, data from ${decoded.dataStart}, ${plural(bytes.length, 'byte')}\n` +
          `  sha256 ${sha256}${nameMatches ? '' : ' (the file name is not <sha256>.awkb)'}\n`,
      );
      if (encoded)
        stdout.write(`  ${'offset'.padStart(10)} ${'stored'.padStart(10)} ${'size'.padStart(10)}  ${'encoding'.padEnd(11)}  sha256\n`);
      for (const member of members) {
        // Version 2 (SPEC §5a): the stored size and encoding beside the decoded size.
        const sizes =
          member.encoding !== undefined
            ? `${String(member.storedBytes).padStart(10)} ${String(member.sizeBytes).padStart(10)}  ${member.encoding.padEnd(11)}`
            : String(member.sizeBytes).padStart(10);
        const damage = member.ok ? '' : `  DAMAGED${member.problem !== undefined ? `: ${printable(member.problem)}` : ''}`;
        stdout.write(
          `  ${String(member.offset).padStart(10)} ${sizes}  ${member.sha256.slice(0, 16)}  ${printable(member.key)}${member.sharesContent ? '  (same content as above)' : ''}${damage}\n`,
        );
      }
    }
    if (damaged.length > 0)
      throw new CommandFailure(
        `${file}: damaged member${damaged.length > 1 ? 's' : ''}: ${damaged.map((member) => member.key).join(', ')}`,
      );
    return 0;
  },
};

/** One member as inspect shows it; `storedBytes`, `encoding` and `problem` only in a version 2 bundle. */
interface InspectedMember {
  key: string;
  offset: number;
  storedBytes?: number;
  encoding?: string;
  sizeBytes: number;
  sha256: string;
  ok: boolean;
  problem?: string;
  sharesContent: boolean;
}

/** Why a member's bytes do not match its record (an encoded one decoded first, SPEC §5a), or undefined when they do. */
async function memberProblem(bundle: Uint8Array, record: BundleRecord): Promise<string | undefined> {
  let bytes = memberBytes(bundle, record);
  if (record.encoding !== undefined) {
    try {
      bytes = await decodeMemberNode(bytes, record);
    } catch (error) {
      if (error instanceof MemberDecodeError) return error.message;
      throw error;
    }
  }
  return sha256HexNode(bytes) === record.sha256 ? undefined : 'SHA-256 differs from its record';
}

/**
 * Why `bytes` are no bundle at all, when they do not begin "AWKB": what the file looks like
 * (a PNG image, JSON text…) or its first bytes, rather than the decoder's "bad magic 89504e47".
 * Undefined for bytes that begin as a bundle does (the decoder names what is wrong past that),
 * a file cut within the magic included.
 */
function notABundleReason(bytes: Uint8Array): string | undefined {
  if (bytes.length === 0) return 'the file is empty';
  const head = bytes.subarray(0, AWKB_MAGIC.length);
  if (head.every((byte, i) => byte === AWKB_MAGIC[i])) return undefined;
  const detail = `its first bytes are ${hexStart(bytes)}, where a bundle's are 41 57 4b 42 ("AWKB")`;
  const kind = fileKind(bytes);
  if (kind === undefined) return detail;
  const hint = kind.startsWith('a project index') ? '. To check an index and its bundles: awake-bundle verify <project.index.json>' : '';
  return `it looks like ${kind}; ${detail}${hint}`;
}
