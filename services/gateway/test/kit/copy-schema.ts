import { schemaTables } from '../../src/store/backup';
import { inTransaction, type Sql } from '../../src/store/database';

/**
 * Copies the rows of schema `from` into the current schema of `sql`, which may be an earlier
 * release's (fewer tables, fewer columns): each table it has, the columns both have, parents
 * first; its migrations' own rows give way (but their bookkeeping), triggers stay off (their rows are copied too), and
 * sequences continue from `from`'s. Both schemas are in one database.
 */
export async function copySchemaRows(sql: Sql, from: string): Promise<void> {
  await inTransaction(sql, async (tx) => {
    const source = await tx<{ table: string; columns: string[] }[]>`
      select c.relname as table,
        array(select a.attname::text from pg_attribute a
              where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped and a.attgenerated = '') as columns
      from pg_class c where c.relnamespace = ${from}::regnamespace and c.relkind in ('r', 'p')`;
    const theirs = new Map(source.map((r) => [r.table, new Set(r.columns)]));
    // The migrations it records are its own release's, not `from`'s.
    const tables = (await schemaTables(tx)).filter((t) => t.name !== 'keygate_migrations');
    await tx`truncate ${tx(tables.map((t) => t.name))}`;
    await tx`set local session_replication_role = replica`;
    for (const table of tables) {
      const cols = table.columns.filter((c) => theirs.get(table.name)?.has(c));
      if (cols.length === 0) continue;
      await tx`insert into ${tx(table.name)} (${tx(cols)}) select ${tx(cols)} from ${tx(`${from}.${table.name}`)}`;
    }
    const sequences = await tx<{ name: string }[]>`
      select relname as name from pg_class where relnamespace = current_schema()::regnamespace and relkind = 'S'`;
    for (const { name } of sequences) {
      const [row] = await tx<
        { value: string }[]
      >`select last_value::text as value from ${tx(`${from}.${name}`)}`;
      await tx`select setval(format('%I', ${name}::text)::regclass, ${row!.value}::bigint)`;
    }
  });
}
