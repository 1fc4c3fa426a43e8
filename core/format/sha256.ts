/**
 * How a SHA-256 is written everywhere in the format (SPEC §2–5): 64 lowercase hex digits, in
 * index entries, bundle tables, bundle file names and cache keys. One copy, for every check.
 */
export const SHA256_HEX_DIGITS = '[0-9a-f]{64}';

/** A whole string that is a SHA-256 in hex. */
export const SHA256_HEX = new RegExp(`^${SHA256_HEX_DIGITS}$`);
