import { inTransaction, type Sql } from '../../src/store/database';

/** The tables of the current schema (partitioned parents, not their partitions), by name. */
export async function tableNames(sql: Sql): Promise<string[]> {
  const rows = await sql<{ name: string }[]>`
    select relname as name from pg_class
    where relnamespace = current_schema()::regnamespace and relkind in ('r', 'p') and not relispartition
    order by 1`;
  return rows.map((r) => r.name);
}

/** Each table's stored columns (`only` keeps those named there: a table's columns of an earlier release). */
export async function tableColumns(sql: Sql): Promise<Record<string, string[]>> {
  const rows = await sql<{ table: string; columns: string[] }[]>`
    select c.relname as table,
      array(select a.attname::text from pg_attribute a
            where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped order by a.attnum) as columns
    from pg_class c
    where c.relnamespace = current_schema()::regnamespace and c.relkind in ('r', 'p') and not c.relispartition`;
  return Object.fromEntries(rows.map((r) => [r.table, r.columns]));
}

/**
 * Each table's row count and a hash of its rows (the named columns, every one by default), in an
 * order that does not depend on how the rows were written.
 */
export async function tableHashes(
  sql: Sql,
  columns?: Record<string, string[]>,
): Promise<Record<string, { rows: number; md5: string | null }>> {
  const all = columns ?? (await tableColumns(sql));
  // Timestamps read as text in one zone, whichever server (and its default zone) holds them.
  return inTransaction(sql, async (tx) => {
    await tx`set local timezone to 'UTC'`;
    const out: Record<string, { rows: number; md5: string | null }> = {};
    for (const [table, cols] of Object.entries(all).sort(([a], [b]) => a.localeCompare(b))) {
      const [row] = await tx<{ rows: number; md5: string | null }[]>`
        select count(*)::int as rows, md5(string_agg(r::text, ',' order by r::text)) as md5
        from (select ${tx(cols)} from ${tx(table)}) r`;
      out[table] = row!;
    }
    return out;
  });
}

/** Each sequence of the schema and the value it stands at. */
export async function sequenceValues(sql: Sql): Promise<Record<string, string>> {
  const names = await sql<{ name: string }[]>`
    select relname as name from pg_class where relnamespace = current_schema()::regnamespace and relkind = 'S'`;
  const out: Record<string, string> = {};
  for (const { name } of names) {
    const [row] = await sql<
      { v: string }[]
    >`select last_value::text || ':' || is_called as v from ${sql(name)}`;
    out[name] = row!.v;
  }
  return out;
}
