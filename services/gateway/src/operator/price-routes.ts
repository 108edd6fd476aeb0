import { Hono } from 'hono';
import { z } from 'zod';
import type { AdminEnv } from '../accounts/scope';
import type { PriceBook } from '../pricing/catalog/price-book';
import { fromLiteLlm, OperatorPrice } from '../pricing/catalog/operator-rows';
import { GatewayError } from '../lib/errors';
import { operation } from '../lib/operation';

const AddPrices = z
  .strictObject({
    prices: z.array(OperatorPrice).min(1).max(1000).optional(),
    /** LiteLLM's model_prices_and_context_window.json, whole or in part. */
    litellm: z.record(z.string(), z.unknown()).optional(),
    /** For `litellm` rows: when they take effect (omitted: always). */
    effective_from: z.iso.date().optional(),
  })
  .refine((b) => (b.prices === undefined) !== (b.litellm === undefined), 'Send one of prices and litellm.');

const DAY = 86_400_000;

/** The price catalog for the operator: what every model costs, and prices to add or override. */
export function operatorPriceRoutes(
  book: PriceBook,
  clock: () => number,
  actorOf: (c: { req: { header(name: string): string | undefined } }) => string,
): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  const tag = 'Operator';

  app.get(
    '/prices',
    operation({
      tag,
      summary:
        'The price catalog in force (bundled list prices, the price file, operator rows) and the unpriced models called in the last 90 days',
    }),
    async (c) => {
      const now = clock();
      const { catalog } = book;
      return c.json({
        version: catalog.data.version,
        data: catalog.data.models.map((m) => ({ type: 'model_price', ...m })),
        unpriced_models: await book.unpricedSince(null, new Date(now - 90 * DAY), new Date(now)),
      });
    },
  );

  app.post(
    '/prices',
    operation({
      tag,
      summary:
        "Add or override prices (USD per million tokens), each in force from its effective date; or import LiteLLM's price file. Past calls in a row's window are repriced.",
      body: AddPrices,
      status: 201,
    }),
    async (c) => {
      const body = c.req.valid('json');
      const prices =
        body.prices ??
        fromLiteLlm(
          body.litellm,
          body.effective_from ?? null,
          'LiteLLM model_prices_and_context_window.json',
        );
      if (prices.length === 0)
        throw new GatewayError(
          'invalid_request_error',
          'litellm: no Anthropic model with input and output prices in it.',
        );
      await book.add(prices, actorOf(c));
      return c.json(
        { added: prices.map((p) => ({ model: p.model, effective_from: p.effective_from })) },
        201,
      );
    },
  );
  return app;
}
