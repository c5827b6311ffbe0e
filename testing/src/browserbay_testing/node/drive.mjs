// A Puppeteer client of the session-scoped endpoint (the tests run it with node; puppeteer-core
// is installed by the tests' own setup, never a project dependency). argv: the endpoint's
// WebSocket URL, a page to open, the URL of another session's tab (it must stay unseen).
// Prints one JSON line: what it saw and did.
import puppeteer from "puppeteer-core";

const [endpoint, url, theirs] = process.argv.slice(2);
const out = {};
const browser = await puppeteer.connect({ browserWSEndpoint: endpoint, defaultViewport: null });
out.before = (await browser.pages()).map((p) => p.url()).sort();
out.targets = browser.targets().map((t) => t.url());
out.sawTheirs = out.targets.includes(theirs);
const page = await browser.newPage();
await page.goto(url);
out.title = await page.title();
await page.click("#buy");
out.status = await page.$eval("#status", (e) => e.textContent);
out.during = (await browser.pages()).map((p) => p.url()).sort();
await page.close();
out.after = (await browser.pages()).map((p) => p.url()).sort();
await browser.disconnect();
console.log(JSON.stringify(out));
