/* SPDX-License-Identifier: MIT */
// flame_check.js — opens a ctxprof HTML flame graph in headless Chromium (Debian's
// /usr/bin/chromium, driven by playwright-core from node_modules) with every request that
// is not file:// refused, and prints what the page shows as one JSON object:
//   node flame_check.js PAGE.html SCREENSHOT.png PROFILE_DIR [FILTER_JSON [GROUP_JSON]]
// FILTER_JSON / GROUP_JSON are option values of the page's selectors (web/flamegraph.html),
// e.g. '["label","route","/checkout"]' and '["key","route"]'. Output: {requests_blocked,
// errors, initial:{shown, root, frames}, filtered:{...}} where root is the title of the
// flame graph's root frame ("all (N samples, P%)"), shown the page's sample count, frames
// the number of frames drawn, names their distinct names, groups the titles of the frames
// one level above the root.
"use strict";
const path = require("path");
const { chromium } = require("playwright-core");

const [page_path, shot, profile_dir, filter, group] = process.argv.slice(2);
const FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
  "--disable-component-update", "--disable-sync", "--no-first-run"];

// d3 keeps an element's running transitions in its __transition property: the graph is
// drawn once no frame has one left.
const settled = () => [...document.querySelectorAll("#chart g, #chart rect, #chart div")]
  .every(e => !e.__transition);

async function state(page) {
  await page.waitForFunction(settled, null, { timeout: 10000 });
  return page.evaluate(() => {
    const frames = [...document.querySelectorAll("#chart g.frame")];
    const title = g => (g.querySelector("title") || {}).textContent || "";
    const root = frames.find(g => g.getAttribute("name") === "all");
    const summary = document.getElementById("summary");
    const y0 = root ? root.transform.baseVal.consolidate().matrix.f : 0;
    const groups = frames.filter(g => root && g !== root &&
      Math.abs(g.transform.baseVal.consolidate().matrix.f - (y0 - 18)) < 1).map(title);
    return { shown: Number(summary.dataset.shown), summary: summary.textContent,
      root: root ? title(root) : null, frames: frames.length, groups: groups,
      names: [...new Set(frames.map(g => g.getAttribute("name")))].sort(),
      rendered: Number(document.body.dataset.rendered || 0) };
  });
}

(async () => {
  const out = { requests_blocked: [], errors: [] };
  const ctx = await chromium.launchPersistentContext(profile_dir, {
    executablePath: "/usr/bin/chromium", headless: true, args: FLAGS,
    viewport: { width: 1280, height: 900 } });
  try {
    await ctx.route("**/*", r => {
      if (r.request().url().startsWith("file://")) return r.continue();
      out.requests_blocked.push(r.request().url());
      return r.abort();
    });
    const page = await ctx.newPage();
    page.on("pageerror", e => out.errors.push(String(e)));
    page.on("console", m => { if (m.type() === "error") out.errors.push(m.text()); });
    await page.goto("file://" + path.resolve(page_path));
    await page.waitForFunction(() => Number(document.body.dataset.rendered || 0) >= 1 &&
      document.querySelectorAll("#chart g.frame title").length > 0, null, { timeout: 20000 });
    out.initial = await state(page);
    out.options = await page.evaluate(() =>
      [...document.querySelectorAll("#filter option")].map(o => o.value));
    if (filter) {
      const n = out.initial.rendered;
      await page.selectOption("#filter", filter);
      await page.waitForFunction(n => Number(document.body.dataset.rendered) > n, n);
      if (group) {
        const m = n + 1;
        await page.selectOption("#group", group);
        await page.waitForFunction(m => Number(document.body.dataset.rendered) > m, m);
      }
      out.filtered = await state(page);
      // search: the library's match total; zoom: a click makes the frame the full width
      await page.fill("#search", "^handle_checkout$");
      await page.waitForFunction(() =>
        document.getElementById("details").textContent.startsWith("search:"));
      out.search = await page.evaluate(() => document.getElementById("details").textContent);
      const frame = page.locator('#chart g.frame[name="handle_checkout"]').first();
      await frame.click();
      await page.waitForFunction(settled, null, { timeout: 10000 });
      out.zoom = await page.evaluate(() => {
        const svg = document.querySelector("#chart svg");
        const w = g => Number(g.querySelector("rect").getAttribute("width"));
        const z = [...document.querySelectorAll('#chart g.frame[name="handle_checkout"]')]
          .map(w).sort((a, b) => b - a)[0];
        return { frame_width: z, chart_width: Number(svg.getAttribute("width")) };
      });
      await page.click("#reset");
      await page.waitForFunction(settled, null, { timeout: 10000 });
    }
    await page.screenshot({ path: shot, fullPage: true });
  } finally {
    await ctx.close();
  }
  console.log(JSON.stringify(out));
})().catch(e => { console.error(String(e && e.stack || e)); process.exit(1); });
