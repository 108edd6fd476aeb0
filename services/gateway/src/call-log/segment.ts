import { crc32 } from 'node:zlib';
import type { CallRecord } from '../lib/call-record';
import { recordOfCopyLine } from './call-copy';

/** A spool line's bytes around its COPY line: 8 hex digits of CRC-32, a space, a newline. */
export const SPOOL_LINE_EXTRA = 10;

/**
 * One spool line: the CRC-32 of the record's line in 8 hex digits, a space, the line, a newline.
 * The record's line is its COPY line (store/call-copy.ts), the one the insert sends; segments an
 * earlier version wrote hold the record's JSON there instead, and are read too. A line torn by a
 * crash (no newline, or a checksum that does not match) is skipped on reading.
 */
export function spoolLine(copyLine: string): string {
  // SPOOL_LINE_EXTRA bytes around the COPY line.
  return `${crc32(copyLine).toString(16).padStart(8, '0')} ${copyLine}\n`;
}

export interface DecodedSegment {
  records: CallRecord[];
  /** Lines that failed their checksum or did not parse: a torn tail after a crash, or damage. */
  skipped: number;
}

/** Reads a segment's text; each call id once (the first line that carries it). */
export function decodeSegment(text: string): DecodedSegment {
  const lines = text.split('\n');
  // Whatever follows the last newline was never completely written.
  const tail = lines.pop();
  let skipped = tail ? 1 : 0;
  const byId = new Map<string, CallRecord>();
  for (const line of lines) {
    const record = decodeLine(line);
    if (!record) skipped++;
    else if (!byId.has(record.id)) byId.set(record.id, record);
  }
  return { records: [...byId.values()], skipped };
}

function decodeLine(line: string): CallRecord | null {
  if (line.length < 10 || line[8] !== ' ') return null;
  const body = line.slice(9);
  if (crc32(body).toString(16).padStart(8, '0') !== line.slice(0, 8)) return null;
  try {
    if (!body.startsWith('{')) return recordOfCopyLine(body);
    const record = JSON.parse(body) as CallRecord & { createdAt: string };
    if (typeof record?.id !== 'string' || typeof record.createdAt !== 'string') return null;
    return { ...record, createdAt: new Date(record.createdAt) };
  } catch {
    return null;
  }
}
