import { crc32 } from 'node:zlib';
import type { CallRecord } from '../lib/call-record';

/**
 * One spool line: the CRC-32 of the JSON in 8 hex digits, a space, the JSON, a newline. A line
 * torn by a crash (no newline, or a checksum that does not match) is skipped on reading.
 */
export function encodeLine(record: CallRecord): string {
  const json = JSON.stringify(record);
  return `${crc32(json).toString(16).padStart(8, '0')} ${json}\n`;
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
  const json = line.slice(9);
  if (crc32(json).toString(16).padStart(8, '0') !== line.slice(0, 8)) return null;
  try {
    const record = JSON.parse(json) as CallRecord & { createdAt: string };
    if (typeof record?.id !== 'string' || typeof record.createdAt !== 'string') return null;
    return { ...record, createdAt: new Date(record.createdAt) };
  } catch {
    return null;
  }
}
