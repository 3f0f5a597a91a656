// The report page in a real browser: opens report.html in Debian's Chromium, headless, through puppeteer-core, with
// every network request refused (the page must be self-contained), waits until every plot has rendered, and fails
// on any console error or warning, any page error, any request beyond the page itself, or a plot that rendered no
// marks (data points, lines, bars). Saves a full-page screenshot.
// Usage: node browser_test.mjs REPORT.html SCREENSHOT.png   (CHROMIUM=path to choose the browser)
// Exit status: 0 passed, 1 failed, 77 skipped (no Chromium).
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import puppeteer from 'puppeteer-core';

const [pagePath, screenshot] = process.argv.slice(2);
if (!pagePath || !screenshot) {
  console.error('usage: node browser_test.mjs REPORT.html SCREENSHOT.png');
  process.exit(2);
}
const chromium = process.env.CHROMIUM || ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));
if (!chromium) {
  console.log('SKIP: no Chromium found (scripts/setup.sh installs Debian\'s chromium; or set CHROMIUM)');
  process.exit(77);
}

const problems = [];
const url = pathToFileURL(resolve(pagePath)).href;
// --no-sandbox: the tests run as root in CI, where Chromium's sandbox refuses to start.
const browser = await puppeteer.launch({
  executablePath: chromium,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
let marks = {};
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1200, height: 900 });
  await page.setRequestInterception(true);
  page.on('request', (request) => {
    if (request.url() === url) {
      request.continue();
    } else {
      problems.push(`the page requested ${request.url()}`);
      request.abort();
    }
  });
  page.on('console', (message) => {
    if (['error', 'warn', 'warning', 'assert'].includes(message.type())) {
      problems.push(`console ${message.type()}: ${message.text()}`);
    }
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  await page.goto(url, { waitUntil: 'load', timeout: 60000 });
  // Data marks of every plot: scenegraph items of the marks whose role is "mark" (not axes, legends or frames).
  marks = await page.evaluate(async () => {
    const report = window.distsgdReport;
    if (!report) return { '(page)': -1 };
    await report.ready;
    const count = (node) => {
      let n = 0;
      if (node.marktype && node.marktype !== 'group' && node.role === 'mark') n += node.items.length;
      for (const item of node.items || []) n += count(item);
      return n;
    };
    const result = {};
    for (const div of document.querySelectorAll('div.chart')) {
      const name = div.id.replace(/^chart-/, '');
      const view = report.views[name];
      result[name] = view ? count(view.scenegraph().root) : -1;
    }
    return result;
  });
  await page.screenshot({ path: screenshot, fullPage: true });
} catch (error) {
  problems.push(`the test could not finish: ${error.message}`);
} finally {
  await browser.close();
}

const names = Object.keys(marks);
if (names.length === 0) problems.push('the page has no plots');
for (const name of names) {
  if (marks[name] === -1) problems.push(`plot ${name} did not render (no view)`);
  else if (marks[name] === 0) problems.push(`plot ${name} rendered no marks`);
  console.log(`plot ${name}: ${marks[name]} marks`);
}
console.log(`screenshot: ${screenshot}`);
for (const problem of problems) console.log(`FAIL: ${problem}`);
process.exit(problems.length === 0 ? 0 : 1);
