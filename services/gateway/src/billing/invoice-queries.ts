import { newId } from '../lib/ids';
import { insertAlertEvent, type NewAlertEvent } from '../budgets/alert-queries';
import { writeAudit } from '../tenancy/audit-queries';
import { inTransaction, type Sql } from '../store/database';
import { keyset, type Page, type PageQuery } from '../store/pagination';

export interface InvoiceLine {
  description: string;
  quantity: number;
  unitAmountCents: number;
  /** Days charged (or credited) out of the period's days, for prorated lines; null for whole periods. */
  days: number | null;
  periodDays: number | null;
  amountCents: number;
}

export interface InvoiceRecord {
  id: string;
  accountId: string;
  number: string;
  periodStart: Date;
  periodEnd: Date;
  currency: string;
  subtotalCents: number;
  taxCents: number;
  totalCents: number;
  status: 'open' | 'paid' | 'void';
  paidAt: Date | null;
  stripeInvoiceId: string | null;
  createdAt: Date;
  lines: InvoiceLine[];
}

export type NewInvoice = Pick<
  InvoiceRecord,
  | 'accountId'
  | 'periodStart'
  | 'periodEnd'
  | 'currency'
  | 'subtotalCents'
  | 'taxCents'
  | 'totalCents'
  | 'lines'
>;

export interface NoticeRecord {
  id: string;
  accountId: string;
  kind: string;
  dueAt: Date;
  message: string;
  createdAt: Date;
  deliveredAt: Date | null;
}

/** A member's seat over time, for prorating seat changes. */
export interface SeatRecord {
  id: string;
  email: string;
  createdAt: Date;
  removedAt: Date | null;
}

const cols = (sql: Sql) => sql`
  t.id, t.account_id as "accountId", t.number, t.period_start as "periodStart", t.period_end as "periodEnd", t.currency,
  t.subtotal_cents as "subtotalCents", t.tax_cents as "taxCents", t.total_cents as "totalCents", t.status, t.paid_at as "paidAt",
  t.stripe_invoice_id as "stripeInvoiceId", t.created_at as "createdAt",
  coalesce((select json_agg(json_build_object('description', l.description, 'quantity', l.quantity, 'unitAmountCents', l.unit_amount_cents,
    'days', l.days, 'periodDays', l.period_days, 'amountCents', l.amount_cents) order by l.position)
    from invoice_lines l where l.invoice_id = t.id), '[]') as lines`;

export function invoiceQueries(sql: Sql) {
  return {
    /** Issues an invoice for a period once: a second issue of the same period returns null. */
    async issue(inv: NewInvoice, actor: string): Promise<InvoiceRecord | null> {
      return inTransaction(sql, async (t) => {
        const id = newId('inv');
        // Numbers count up per account: issues for one account take turns.
        await t`select id from accounts where id = ${inv.accountId} for update`;
        const [count] = await t<
          { n: number }[]
        >`select count(*)::int + 1 as n from invoices where account_id = ${inv.accountId}`;
        const number = `${inv.accountId.slice(-8).toUpperCase()}-${String(count!.n).padStart(4, '0')}`;
        const inserted = await t`
          insert into invoices (id, account_id, number, period_start, period_end, currency, subtotal_cents, tax_cents, total_cents, status)
          values (${id}, ${inv.accountId}, ${number}, ${inv.periodStart}, ${inv.periodEnd}, ${inv.currency}, ${inv.subtotalCents},
                  ${inv.taxCents}, ${inv.totalCents}, 'open')
          on conflict (account_id, period_start) do nothing returning id`;
        if (inserted.length === 0) return null;
        for (const [i, l] of inv.lines.entries()) {
          await t`
            insert into invoice_lines (invoice_id, position, description, quantity, unit_amount_cents, days, period_days, amount_cents)
            values (${id}, ${i}, ${l.description}, ${l.quantity}, ${l.unitAmountCents}, ${l.days}, ${l.periodDays}, ${l.amountCents})`;
        }
        await writeAudit(t, inv.accountId, {
          actor,
          action: 'invoice.issue',
          targetId: id,
          details: { number, total_cents: inv.totalCents },
        });
        const [row] = await t<InvoiceRecord[]>`select ${cols(t)} from invoices t where t.id = ${id}`;
        return row!;
      });
    },

    async get(accountId: string, id: string): Promise<InvoiceRecord | null> {
      const [row] = await sql<
        InvoiceRecord[]
      >`select ${cols(sql)} from invoices t where t.account_id = ${accountId} and t.id = ${id}`;
      return row ?? null;
    },

    async list(accountId: string, q: PageQuery): Promise<Page<InvoiceRecord>> {
      const k = keyset(sql, 'invoices', accountId, q);
      const rows = await sql<
        InvoiceRecord[]
      >`select ${cols(sql)} from invoices t where t.account_id = ${accountId} ${k.where} ${k.order} limit ${k.limit}`;
      return k.finish(rows);
    },

    /** Marks open invoices paid whose period ended by `through` (all of them when null). */
    async markPaid(
      accountId: string,
      through: Date | null,
      paidAt: Date,
      stripeInvoiceId: string | null,
    ): Promise<number> {
      const rows = await sql`
        update invoices set status = 'paid', paid_at = ${paidAt}, stripe_invoice_id = coalesce(${stripeInvoiceId}, stripe_invoice_id)
        where account_id = ${accountId} and status = 'open' and (${through}::timestamptz is null or period_end <= ${through})
        returning id`;
      return rows.length;
    },

    /** Every seat of the account that overlapped [from, to), with its member's email. */
    async seats(accountId: string, from: Date, to: Date): Promise<SeatRecord[]> {
      return sql<SeatRecord[]>`
        select id, email, created_at as "createdAt", removed_at as "removedAt" from members
        where account_id = ${accountId} and created_at < ${to} and (removed_at is null or removed_at >= ${from})
        order by created_at, id`;
    },

    /**
     * Records a notice once per account, kind and due time; true when it is new. A new notice's
     * `alert` is queued in the same transaction.
     */
    async notice(
      n: Pick<NoticeRecord, 'accountId' | 'kind' | 'dueAt' | 'message'>,
      alert?: NewAlertEvent,
    ): Promise<boolean> {
      return inTransaction(sql, async (t) => {
        const rows = await t`
          insert into billing_notices (id, account_id, kind, due_at, message)
          values (${newId('notice')}, ${n.accountId}, ${n.kind}, ${n.dueAt}, ${n.message})
          on conflict do nothing returning id`;
        if (rows.length > 0 && alert) await insertAlertEvent(t, alert);
        return rows.length > 0;
      });
    },

    async notices(accountId: string): Promise<NoticeRecord[]> {
      return sql<NoticeRecord[]>`
        select id, account_id as "accountId", kind, due_at as "dueAt", message, created_at as "createdAt", delivered_at as "deliveredAt"
        from billing_notices where account_id = ${accountId} order by created_at desc, id desc limit 20`;
    },
  };
}

export type InvoiceQueries = ReturnType<typeof invoiceQueries>;
