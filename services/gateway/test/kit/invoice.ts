import type { InvoiceQueries } from '../../src/billing/invoice-queries';

/** One issued invoice of a team seat for `accountId`, from now for a day (what the billing clock would issue). */
export function issueSeatInvoice(store: { invoices: InvoiceQueries }, accountId: string) {
  const now = new Date();
  return store.invoices.issue(
    {
      accountId,
      periodStart: now,
      periodEnd: new Date(now.getTime() + 86_400_000),
      currency: 'EUR',
      subtotalCents: 1900,
      taxCents: 0,
      totalCents: 1900,
      lines: [
        {
          description: 'Team seat',
          quantity: 1,
          unitAmountCents: 1900,
          days: null,
          periodDays: null,
          amountCents: 1900,
        },
      ],
    },
    'test',
  );
}
