import { html } from 'hono/html';
import type { InvoiceRecord } from './invoice-queries';

export const eur = (cents: number) => `${cents < 0 ? '−' : ''}€${(Math.abs(cents) / 100).toFixed(2)}`;
const date = (d: Date) => d.toISOString().slice(0, 10);

/** A printable invoice (every value escaped); served by the account API and linked from the dashboard. */
export function invoiceHtml(invoice: InvoiceRecord, account: { id: string; name: string }) {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Invoice ${invoice.number}</title>
<style>
  body { font: 14px/1.45 system-ui, sans-serif; color: #111; max-width: 46rem; margin: 2rem auto; padding: 0 1rem; }
  table { width: 100%; border-collapse: collapse; margin: 1.5rem 0; }
  th, td { text-align: left; padding: .4rem .3rem; border-bottom: 1px solid #ddd; }
  td.n, th.n { text-align: right; white-space: nowrap; }
  tfoot td { border: 0; }
  .muted { color: #666; }
  @media print { body { margin: 0; } }
</style>
</head>
<body>
<h1>Invoice ${invoice.number}</h1>
<p>Keygate subscription for <strong>${account.name}</strong> <span class="muted">(${account.id})</span></p>
<p>Period ${date(invoice.periodStart)} to ${date(invoice.periodEnd)} · Status: ${invoice.status}${invoice.paidAt ? ` (paid ${date(invoice.paidAt)})` : ''} · Currency: ${invoice.currency}</p>
<table>
  <thead><tr><th>Description</th><th class="n">Qty</th><th class="n">Unit</th><th class="n">Days</th><th class="n">Amount</th></tr></thead>
  <tbody>
    ${invoice.lines.map(
      (l) =>
        html`<tr><td>${l.description}</td><td class="n">${l.quantity}</td><td class="n">${eur(l.unitAmountCents)}</td><td class="n">${l.days === null ? '' : `${l.days}/${l.periodDays}`}</td><td class="n">${eur(l.amountCents)}</td></tr>`,
    )}
  </tbody>
  <tfoot>
    <tr><td colspan="4" class="n">Subtotal</td><td class="n">${eur(invoice.subtotalCents)}</td></tr>
    <tr><td colspan="4" class="n">Tax</td><td class="n">${eur(invoice.taxCents)}</td></tr>
    <tr><td colspan="4" class="n"><strong>Total</strong></td><td class="n"><strong>${eur(invoice.totalCents)}</strong></td></tr>
  </tfoot>
</table>
<p class="muted">Prorated lines charge or credit the days shown out of the period's days, each rounded to the nearest cent (halves up). Model usage is billed in USD by the provider and is not part of this invoice.</p>
</body>
</html>`;
}
