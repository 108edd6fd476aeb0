import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sealedQueries } from '../accounts/sealed-queries';
import type { Config } from '../config';
import { embeddedClusterDir, runningGateway } from '../lib/data-dir';
import type { Database } from '../store';
import { CliError, EXIT } from './backend';
import { required, type Command } from './command';

const where = (config: Config) =>
  config.databaseUrl
    ? `the database of DATABASE_URL${config.dbSchema ? ` (schema ${config.dbSchema})` : ''}`
    : `the embedded database in ${config.dataDir}`;

/**
 * The database a backup reads. On the embedded database a running gateway owns the data dir:
 * the backup connects to that gateway's PostgreSQL (its port in postmaster.pid, its password in
 * the data dir) and reads beside it, as it does beside a gateway on an external database.
 */
async function openSource(config: Config): Promise<Database> {
  const { openDatabase } = await import('../store');
  const schema = config.dbSchema ? { schema: config.dbSchema } : {};
  if (config.databaseUrl)
    return openDatabase({ url: config.databaseUrl, dataDir: config.dataDir, ...schema, max: 1 });
  const cluster = embeddedClusterDir(config.dataDir);
  if (!existsSync(join(cluster, 'PG_VERSION')))
    throw new CliError(
      `no database in ${config.dataDir}: nothing to back up (set KEYGATE_DATA_DIR or DATABASE_URL)`,
    );
  if (runningGateway(config.dataDir)) {
    const port = readFileSync(join(cluster, 'postmaster.pid'), 'utf8').split('\n')[3]?.trim();
    const password = readFileSync(join(config.dataDir, 'database-password'), 'utf8').trim();
    const url = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
    return openDatabase({ url, dataDir: config.dataDir, ...schema, max: 1 });
  }
  return openDatabase({ url: null, dataDir: config.dataDir, ...schema, owner: 'keygate backup', max: 1 });
}

/** Whether the restored provider keys open with the secret this gateway will use; a sentence when not. */
async function secretWarning(db: Database, config: Config): Promise<string | null> {
  const row = await sealedQueries(db.sql).anyProviderKey();
  if (!row) return null;
  const advice =
    "the backup's provider keys are sealed with the KEYGATE_SECRET of the gateway it came from (on the embedded database, the `secret` file of its data dir): start the gateway with that secret";
  const secretFile = join(config.dataDir, 'secret');
  const secret =
    config.secret ??
    (!config.databaseUrl && existsSync(secretFile) ? readFileSync(secretFile, 'utf8').trim() : null);
  if (!secret)
    return `${advice}, e.g. copy that file to ${secretFile} or set KEYGATE_SECRET, before the first start.`;
  const { SecretBox } = await import('../lib/secret-box');
  try {
    new SecretBox(secret, { previous: config.previousSecret }).open(row.sealed, {
      purpose: 'provider-key',
      row: row.id,
    });
    return null;
  } catch {
    return `the secret in use does not open the restored provider keys; ${advice}.`;
  }
}

/** A backup's refusal (not a backup, a newer one, a target not empty) said in one line, without a stack. */
async function said<T>(work: Promise<T>): Promise<T> {
  const { BackupError } = await import('../store/backup-file');
  return work.catch((err) => {
    throw err instanceof BackupError ? new CliError(err.message) : err;
  });
}

export const backupCommands: Record<string, Command> = {
  backup: {
    summary: 'Write a consistent copy of the whole database to a file, while the gateway runs',
    usage: `Usage: keygate backup --out FILE

Copies every table of Keygate's database (DATABASE_URL and KEYGATE_DB_SCHEMA, else the embedded
database in KEYGATE_DATA_DIR, read beside a running gateway) as one snapshot into FILE (gzip).
The gateway keeps serving meanwhile. FILE holds key hashes, sealed provider keys and the call log:
keep it as private as the database. It holds no KEYGATE_SECRET: keep that (on the embedded
database, the data dir's \`secret\` file) too, or the restored provider keys will not open.`,
    options: { out: { type: 'string' } },
    async run(values, config) {
      const out = required(values, 'out', backupCommands.backup!.usage);
      const [{ writeBackupFile }, db] = await Promise.all([import('../store/backup'), openSource(config)]);
      try {
        const { header, rows, bytes } = await said(writeBackupFile(db.sql, out));
        const total = Object.values(rows).reduce((a, b) => a + b, 0);
        const summary = {
          file: out,
          bytes,
          created_at: header.created_at,
          schema: header.schema,
          migrations: header.migrations.length,
          tables: header.tables.length,
          rows: total,
        };
        process.stdout.write(
          values.json
            ? `${JSON.stringify(summary, null, 2)}\n`
            : `backed up ${where(config)}: ${header.tables.length} tables, ${total} rows, ${header.migrations.length} migrations, to ${out} (${bytes} bytes)\n`,
        );
      } finally {
        await db.close();
      }
      return EXIT.ok;
    },
  },

  restore: {
    summary: 'Restore a backup file into an empty database, then migrate it to this version',
    usage: `Usage: keygate restore --from FILE [--force]

Restores a file written by \`keygate backup\` into DATABASE_URL (schema KEYGATE_DB_SCHEMA), else
into the embedded database in KEYGATE_DATA_DIR (no gateway may be running on it). The schema is
migrated to the backup's migrations, the rows are loaded in one transaction, and the migrations
this version adds are applied. A backup made by a newer version is refused.

  --force   the target is not empty: drop its schema with everything in it (every table,
            function and sequence, Keygate's or not) and restore into it anew

Start the gateway with the KEYGATE_SECRET of the one backed up (embedded: copy its data dir's
\`secret\` file), or the restored provider keys will not open.`,
    options: { from: { type: 'string' }, force: { type: 'boolean' } },
    async run(values, config) {
      const from = required(values, 'from', backupCommands.restore!.usage);
      if (!existsSync(from)) throw new CliError(`${from}: no such file`, EXIT.usage);
      if (!config.databaseUrl && runningGateway(config.dataDir))
        throw new CliError(
          `a gateway is serving ${config.dataDir}: stop it before restoring into its database`,
        );
      const [{ restoreBackupFile }, { openDatabase }] = await Promise.all([
        import('../store/restore'),
        import('../store'),
      ]);
      const db = await openDatabase({
        url: config.databaseUrl,
        dataDir: config.dataDir,
        ...(config.dbSchema ? { schema: config.dbSchema } : {}),
        owner: 'keygate restore',
        max: 1,
      });
      try {
        const summary = await said(restoreBackupFile(db.sql, from, { force: values.force === true }));
        const total = Object.values(summary.rows).reduce((a, b) => a + b, 0);
        const warning = await secretWarning(db, config);
        if (warning) process.stderr.write(`keygate: ${warning}\n`);
        const lines = [
          summary.dropped.length ? `dropped the ${summary.dropped.length} tables there (--force)` : null,
          `restored ${total} rows in ${summary.header.tables.length} tables from ${from} (made ${summary.header.created_at})`,
          summary.migrated.length ? `then applied ${summary.migrated.join(', ')}` : null,
        ].filter(Boolean);
        process.stdout.write(
          values.json
            ? `${JSON.stringify({ file: from, rows: total, tables: summary.header.tables.length, dropped: summary.dropped, migrated: summary.migrated, secret_warning: warning }, null, 2)}\n`
            : `${where(config)}: ${lines.join('; ')}\n`,
        );
      } finally {
        await db.close();
      }
      return EXIT.ok;
    },
  },
};
