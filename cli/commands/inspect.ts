/** `awake-bundle inspect <file.awkb>`: print a bundle's header and members. */
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { BundleFormatError } from '../../core/errors.js';
import { memberBytes } from '../../core/format/awkb.js';
import { decodeBundle } from '../../core/format/awkb-decode.js';
import { sha256HexNode } from '../../core/node/hash.js';
import { CommandFailure, parseCommandLine, plural, printable, UsageError, type Command } from '../usage.js';

const HELP = `Usage: awake-bundle inspect <file.awkb> [--json]

Prints the bundle's header and its members (key, offset, size, SHA-256), checking each member's
bytes against its table record and the file's name against its SHA-256.
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
    const sha256 = sha256HexNode(bytes);
    let decoded;
    try {
      decoded = decodeBundle(bytes);
    } catch (error) {
      if (error instanceof BundleFormatError) throw new CommandFailure(`${file}: ${error.message}`);
      throw error;
    }
    const seenContents = new Set<string>();
    const members = decoded.records.map((record) => {
      const ok = sha256HexNode(memberBytes(bytes, record)) === record.sha256;
      const copy = seenContents.has(record.sha256);
      seenContents.add(record.sha256);
      return { ...record, ok, sharesContent: copy };
    });
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
      for (const member of members) {
        stdout.write(
          `  ${String(member.offset).padStart(10)} ${String(member.sizeBytes).padStart(10)}  ${member.sha256.slice(0, 16)}  ${printable(member.key)}${member.sharesContent ? '  (same content as above)' : ''}${member.ok ? '' : '  DAMAGED'}\n`,
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
