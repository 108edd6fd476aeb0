import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { accessibilityProblems, launchBrowser, screenshot, signIn } from './dashboard-browser';
import { startStack, type Stack } from './harness';
import { docFiles } from './kit/doc-commands';

// A real browser on a shared 2-core machine: each step may take a while.
vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

/** A common laptop screen, as in dashboard-layout.test.ts. */
const VIEWPORT = { width: 1366, height: 768 };

let stack: Stack;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  stack = await startStack();
  browser = await launchBrowser();
  page = await (await browser.newContext({ viewport: VIEWPORT })).newPage();
  await signIn(page, stack.gateway.url, stack.config.operatorToken!);
});
afterAll(async () => {
  await browser?.close();
  await stack?.close();
});

/** What a reader would see of the page: no sideways scroll, and no Markdown left as it was written. */
async function readable(what: string): Promise<void> {
  const width = await page.evaluate<number>('document.documentElement.scrollWidth');
  expect(width, `${what}: page width`).toBeLessThanOrEqual(VIEWPORT.width);
  // Text outside code blocks: inline code is <code>, never `backticks`; no **bold** or [link](…) left raw.
  const prose = await page.evaluate<string>(
    `(() => { const m = document.querySelector('main').cloneNode(true); m.querySelectorAll('pre').forEach((p) => p.remove()); return m.innerText; })()`,
  );
  expect(prose, what).not.toMatch(/`[^`\n]+`/);
  expect(prose, what).not.toMatch(/\*\*[^*\n]+\*\*|\]\([^)\s]+\)/);
  expect(await accessibilityProblems(page), what).toEqual([]);
}

describe('the Guides page: README.md and docs/ in the dashboard', () => {
  it('is in the nav and lists every guide', async () => {
    await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Guides' }).click();
    await page.waitForURL(/\/dashboard\/guides$/);
    expect(await page.locator('h1').textContent()).toBe('Guides');
    const links = page.getByRole('navigation', { name: 'Guides' }).getByRole('link');
    expect(await links.count()).toBe(docFiles().length);
    expect(await links.first().textContent()).toBe('Quick start');
    await readable('guides');
    await screenshot(page, 'guides');
  });

  it('shows a guide: headings, code blocks, tables and links to the other guides', async () => {
    await page
      .getByRole('navigation', { name: 'Guides' })
      .getByRole('link', { name: 'Limits and policies' })
      .click();
    await page.waitForURL(/\/dashboard\/guides\/claude-code\/limits-and-policies$/);
    expect(await page.locator('h1').textContent()).toBe('Limits and policies');
    await expect
      .poll(() => page.locator('main pre', { hasText: 'keygate key update' }).count())
      .toBeGreaterThan(0);
    expect(await page.locator('main h2#steps').count()).toBe(1);
    await readable('limits and policies');
    await screenshot(page, 'guide-limits');

    // The quick start's links lead to the guides' pages; its widest code lines scroll in place.
    await page.goto(`${stack.gateway.url}/dashboard/guides/quick-start`);
    await page.locator('main a', { hasText: 'docs/README.md' }).click();
    await page.waitForURL(/\/dashboard\/guides\/index$/);
    await readable('index');
    // The widest tables (the settings reference) stay inside the page.
    await page.goto(`${stack.gateway.url}/dashboard/guides/reference/settings`);
    expect(await page.locator('main table').count()).toBe(1);
    await readable('settings');
    await screenshot(page, 'guide-settings');
  });

  it('answers an unknown guide, or a path that climbs out, with the 404 page', async () => {
    for (const path of ['no-such-guide', '..%2F..%2Fpackage.json', 'apps/../../README']) {
      const res = await page.goto(`${stack.gateway.url}/dashboard/guides/${path}`);
      expect(res!.status(), path).toBe(404);
    }
  });
});
