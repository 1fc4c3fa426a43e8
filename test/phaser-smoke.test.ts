import { buildPhaserSite, PHASER_PAGES } from './helpers/phaser-site';
import { launchBrowser, startRepoServer } from './helpers/browser';

test('smoke', async () => {
  const site = buildPhaserSite();
  const server = await startRepoServer({ mounts: { '/site/': site.dir, '/page/': PHASER_PAGES } });
  const chromium = await launchBrowser();
  const page = await chromium.browser.newPage();
  page.on('console', (m) => { if (!m.text().includes('GL Driver')) console.log(`[page ${m.type()}] ${m.text()}`); });
  page.on('pageerror', (e) => console.log(`[pageerror] ${e}`));
  await page.goto(`${server.origin}/page/phaser4.html`);
  await page.waitForFunction(() => (window as any).runScene !== undefined, { timeout: 20000 });
  const loose = await page.evaluate(() => (window as any).runScene({ renderer: 'WEBGL', baseURL: '/site/loose/' }));
  const summary = (r: any) => JSON.stringify({ source: r.first.source, renderer: r.first.renderer, progress: r.events.progress.map((p: any) => +p[1].toFixed(3)).join(' '), loaderror: r.events.loaderror, awkb: r.events.awkbprogress.slice(-2), plugin: r.events.pluginProgress.length, fileprogress: r.events.fileprogress.length, revoked: r.revokedAfterDestroy, video: r.first.caches.video });
  console.log('LOOSE ' + summary(loose));
  server.resetRequests();
  await page.goto(`${server.origin}/page/phaser4.html`);
  await page.waitForFunction(() => (window as any).runScene !== undefined, { timeout: 20000 });
  const bundled = await page.evaluate(() => (window as any).runScene({ renderer: 'WEBGL', baseURL: '/site/published/', index: { url: 'project.index.json', options: { cache: 'memory' } }, plugin: true }));
  console.log('BUNDLED ' + summary(bundled));
  for (const key of Object.keys(loose.first.caches)) if (JSON.stringify(loose.first.caches[key]) !== JSON.stringify(bundled.first.caches[key])) console.log('DIFF ' + key + ' ' + JSON.stringify(loose.first.caches[key]) + ' vs ' + JSON.stringify(bundled.first.caches[key]));
  console.log(server.requests.filter((r) => r.path.startsWith('/site/')).map((r) => r.path).join('\n'));
  await chromium.close();
  await server.close();
}, 120000);
