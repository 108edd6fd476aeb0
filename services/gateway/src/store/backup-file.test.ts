import { describe, expect, it } from 'vitest';
import { BackupError, BackupReader, countRows } from './backup-file';

// COPY text rows: a value ending in a backslash and a dot is written `\\.`, never a line `\.`.
const sections = ['1\ta\\\\.\n2\t\\N\n', '', '\\\\.\tx\n', '3\t\\\\\n'];
const file = `{"format":"keygate-backup"}\n${sections.map((s) => `${s}\\.\n`).join('')}{"end":true}\n`;

async function* chunks(text: string, size: number) {
  const bytes = Buffer.from(text);
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

async function readAll(reader: BackupReader): Promise<string> {
  const parts: Buffer[] = [];
  for await (const piece of reader.section()) parts.push(piece);
  return Buffer.concat(parts).toString();
}

describe('BackupReader', () => {
  it('splits a backup into its header, sections and trailer, wherever the chunks break', async () => {
    for (let size = 1; size <= file.length; size++) {
      const reader = new BackupReader(chunks(file, size));
      expect(await reader.json()).toEqual({ format: 'keygate-backup' });
      for (const s of sections) expect(await readAll(reader), `chunks of ${size}`).toBe(s);
      expect(await reader.json()).toEqual({ end: true });
    }
  });

  it('says a file cut short is incomplete', async () => {
    const reader = new BackupReader(chunks(file.slice(0, file.indexOf('2\t')), 7));
    await reader.json();
    await expect(readAll(reader)).rejects.toThrow(BackupError);
  });

  it('counts the rows of COPY text', () => {
    expect(countRows(Buffer.from(sections[0]!))).toBe(2);
    expect(countRows(Buffer.alloc(0))).toBe(0);
  });
});
