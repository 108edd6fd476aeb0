import { toFile } from '@anthropic-ai/sdk';
import { readFile } from 'node:fs/promises';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { launchBrowser, parseCsv, screenshot, signIn, tableText } from './dashboard-browser';
import { callModel } from './harness';
import { failure, startSurfaceStack, type SurfaceStack } from './surface-kit';

// A real browser on a shared 2-core machine: each step may take a while.
vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

const FILES_BETA = 'files-api-2025-04-14';
const GROUP = 'upload-then-ask';

let s: SurfaceStack;
let browser: Browser;
let page: Page;
let base: string;

beforeAll(async () => {
  s = await startSurfaceStack();
  base = s.stack.gateway.url;
  // Alice's real calls through the gateway: Files calls (one of them refused by the provider), then
  // a Messages call, all in one request group.
  const group = { headers: { 'keygate-group-id': GROUP } };
  const { client } = s.alice;
  const file = await client.beta.files.upload(
    {
      file: await toFile(Buffer.from('quarterly numbers'), 'q3.txt', { type: 'text/plain' }),
      betas: [FILES_BETA],
    },
    group,
  );
  await client.beta.files.list({ betas: [FILES_BETA] }, group);
  expect(await (await client.beta.files.download(file.id, { betas: [FILES_BETA] }, group)).text()).toBe(
    'quarterly numbers',
  );
  expect(
    (await failure(client.beta.files.retrieveMetadata('file_011CNoSuchFile0000000000', {}, group))).status,
  ).toBe(404);
  expect((await callModel(base, s.alice.key, { 'keygate-group-id': GROUP })).status).toBe(200);
  await s.stack.gateway.writer.flush();
  browser = await launchBrowser();
  page = await (await browser.newContext({ acceptDownloads: true })).newPage();
  await signIn(page, base, s.adminKey);
});
afterAll(async () => {
  await browser?.close();
  await s?.stack.close();
});

/** The calls table on screen, each row keyed by its column labels. */
async function callRows(): Promise<Record<string, string>[]> {
  const [head, ...rows] = await tableText(page, 'calls');
  return rows.map((r) => Object.fromEntries(r.map((cell, i) => [head![i], cell])));
}

const pick = (rows: Record<string, string>[]) =>
  rows.map((r) => [r.Endpoint, r.Model, r.Status]).sort((a, b) => a[0]!.localeCompare(b[0]!));

describe('the call log names the endpoint of each call', () => {
  it('shows Files calls as Files calls: their endpoint, their own status, no model and no cost', async () => {
    await page.goto(`${base}/dashboard/calls?period=7d&key=${s.alice.keyId}`);
    await screenshot(page, '60-calls-endpoints');
    const rows = await callRows();
    expect(pick(rows)).toEqual([
      ['Files: download', '', '200'],
      ['Files: get', '', '404 not_found_error'],
      ['Files: list', '', '200'],
      ['Files: upload', '', '200'],
      ['Messages', 'claude-opus-4-5', '200'],
    ]);
    const upload = rows.find((r) => r.Endpoint === 'Files: upload')!;
    expect(upload['Cost (USD)']).toBe('0.0000');
    expect(Number(rows.find((r) => r.Endpoint === 'Messages')!['Cost (USD)'])).toBeGreaterThan(0);

    // Only the refused lookup is an error; the upload and the other Files calls are not.
    await page.goto(`${base}/dashboard/calls?period=7d&key=${s.alice.keyId}&status=error`);
    expect(pick(await callRows())).toEqual([['Files: get', '', '404 not_found_error']]);
  });

  it('the CSV export carries the endpoint column exactly as on screen', async () => {
    await page.goto(`${base}/dashboard/calls?period=7d&key=${s.alice.keyId}`);
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('link', { name: /CSV of the whole filtered log/ }).click(),
    ]);
    const csv = parseCsv(await readFile((await download.path())!, 'utf8'));
    expect(csv).toEqual(await tableText(page, 'calls'));
    expect(csv[0]!.indexOf('Endpoint')).toBe(csv[0]!.indexOf('Model') + 1);
  });

  it('the Endpoint filter offers the endpoints called, by name, and narrows the log and its CSV to one', async () => {
    await page.goto(`${base}/dashboard/calls?period=7d&key=${s.alice.keyId}`);
    const select = page.getByLabel('Endpoint');
    const options = await select
      .locator('option')
      .evaluateAll((os) => os.map((o) => [o.getAttribute('value'), o.textContent]));
    expect(options).toEqual([
      ['', 'any'],
      ['GET /v1/files', 'Files: list'],
      ['GET /v1/files/{id}', 'Files: get'],
      ['GET /v1/files/{id}/content', 'Files: download'],
      ['POST /v1/files', 'Files: upload'],
      ['messages', 'Messages'],
    ]);
    await select.selectOption({ label: 'Files: upload' });
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/endpoint=/);
    // The other filters are kept, and the choice stays selected.
    expect(new URL(page.url()).searchParams.get('endpoint')).toBe('POST /v1/files');
    expect(new URL(page.url()).searchParams.get('key')).toBe(s.alice.keyId);
    expect(await select.inputValue()).toBe('POST /v1/files');
    expect(pick(await callRows())).toEqual([['Files: upload', '', '200']]);
    await screenshot(page, '61-calls-endpoint-filter');
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('link', { name: /CSV of the whole filtered log/ }).click(),
    ]);
    const csv = parseCsv(await readFile((await download.path())!, 'utf8'));
    expect(csv).toEqual(await tableText(page, 'calls'));
    expect(csv).toHaveLength(2);

    // An endpoint with no call in the period stays chosen and shows an empty log, not every call.
    await page.goto(`${base}/dashboard/calls?period=7d&endpoint=${encodeURIComponent('POST /v1/skills')}`);
    expect(await page.getByLabel('Endpoint').inputValue()).toBe('POST /v1/skills');
    expect((await callRows()).map((r) => Object.values(r))).toEqual([['No calls match.']]);
  });

  it('the account API filters the call log by endpoint too, and refuses an empty one', async () => {
    const get = (q: string) =>
      fetch(`${base}/v1/organizations/requests?${q}`, { headers: { 'x-api-key': s.adminKey } });
    const res = await get(`api_key_id=${s.alice.keyId}&endpoint=${encodeURIComponent('GET /v1/files/{id}')}`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { data: { endpoint: string; status: number }[] };
    expect(body.data.map((r) => [r.endpoint, r.status])).toEqual([['GET /v1/files/{id}', 404]]);
    const empty = await get('endpoint=');
    expect(empty.status).toBe(400);
    expect(((await empty.json()) as { error: { type: string } }).error.type).toBe('invalid_request_error');
  });

  it("a group's page lists its calls in order with their endpoints", async () => {
    await page.goto(`${base}/dashboard/groups/${GROUP}?period=7d`);
    expect((await callRows()).map((r) => r.Endpoint)).toEqual([
      'Files: upload',
      'Files: list',
      'Files: download',
      'Files: get',
      'Messages',
    ]);
  });
});
