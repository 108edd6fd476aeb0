/**
 * The backup file: gzip of one JSON header line, then one section per table in the header's
 * order (the table's rows in COPY's text format, ended by a `\.` line, as pg_dump writes them),
 * then one JSON trailer line with each table's row count. A data line of COPY's text format never
 * reads `\.`: a backslash in a value is written `\\`.
 */
export const BACKUP_FORMAT = 'keygate-backup';
export const BACKUP_VERSION = 1;

export interface BackupTable {
  name: string;
  /** Stored columns in the order of the section's rows (generated columns are recomputed). */
  columns: string[];
}

export interface BackupHeader {
  format: typeof BACKUP_FORMAT;
  version: number;
  created_at: string;
  /** The schema the tables came from (a restore writes into its own). */
  schema: string;
  server_version: string;
  /** The migrations the database had applied, in the order they were applied. */
  migrations: string[];
  tables: BackupTable[];
  /** The call log's monthly partitions (`calls_pYYYYMM`), recreated before its rows come back. */
  partitions: string[];
  sequences: { name: string; last_value: string; is_called: boolean }[];
}

export interface BackupTrailer {
  end: true;
  rows: Record<string, number>;
}

/** A backup that cannot be restored as it is, or a target it cannot be restored into. */
export class BackupError extends Error {}

export const SECTION_END = Buffer.from('\\.\n');
const LINE_END = Buffer.from('\n\\.\n');

/** Counts the rows of COPY text output (one line each). */
export function countRows(chunk: Buffer): number {
  let n = 0;
  for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) n++;
  return n;
}

/** Reads a backup's lines and sections from its decompressed bytes, holding one chunk at a time. */
export class BackupReader {
  private buf: Buffer = Buffer.alloc(0);
  constructor(private readonly source: AsyncIterator<Buffer>) {}

  private async more(): Promise<void> {
    const next = await this.source.next();
    if (next.done) throw new BackupError('the backup file ends early: it is incomplete');
    this.buf = this.buf.length ? Buffer.concat([this.buf, next.value]) : next.value;
  }

  async json<T>(): Promise<T> {
    let i: number;
    while ((i = this.buf.indexOf(10)) === -1) await this.more();
    const line = this.buf.subarray(0, i).toString('utf8');
    this.buf = this.buf.subarray(i + 1);
    try {
      return JSON.parse(line) as T;
    } catch {
      throw new BackupError('not a Keygate backup file (its first line is not a backup header)');
    }
  }

  /** The bytes of the next section, in pieces, without its `\.` line. */
  async *section(): AsyncGenerator<Buffer> {
    while (this.buf.length < SECTION_END.length) await this.more();
    if (this.buf.subarray(0, SECTION_END.length).equals(SECTION_END)) {
      this.buf = this.buf.subarray(SECTION_END.length);
      return;
    }
    for (;;) {
      const at = this.buf.indexOf(LINE_END);
      if (at !== -1) {
        const rows = this.buf.subarray(0, at + 1);
        this.buf = this.buf.subarray(at + LINE_END.length);
        yield rows;
        return;
      }
      // Keep what could be the start of the end line; pass the rest on.
      const keep = LINE_END.length - 1;
      if (this.buf.length > keep) {
        const rows = this.buf.subarray(0, this.buf.length - keep);
        this.buf = this.buf.subarray(this.buf.length - keep);
        yield rows;
      }
      await this.more();
    }
  }
}
