/**
 * The read token never leaves its origin, and an index cannot make the reader fetch from an
 * origin the caller did not allow (SPEC §7 "Tokens"). Real servers on 127.0.0.1, two ports =
 * two origins; each server records the Authorization header of every request it received.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  IndexedAssetSource,
  OriginNotAllowedError,
  TokenOriginError,
  bindTokenOrigin,
  tokenAuthorizedFetch,
  type BundledIndex,
} from '../core/internal.js';
import { publishSite, startScriptedServer, type PublishedSite, type ScriptedServer } from './helpers/scripted-site';

let site: PublishedSite;
const servers: ScriptedServer[] = [];

beforeAll(async () => {
  site = await publishSite(3, 2, (n) => 1000 + n * 100);
});
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function serve(resources = site.resources): Promise<ScriptedServer> {
  const server = await startScriptedServer(resources);
  servers.push(server);
  return server;
}

const authorizations = (server: ScriptedServer) => server.requests.map((request) => [request.path, request.headers.authorization]);
const firstPath = () => [...site.files.keys()][0]!;
/** The index with its first bundle at `url` (an absolute URL elsewhere). */
function indexWithBundleAt(url: (bundle: BundledIndex['bundles'][number]) => string): BundledIndex {
  const index = structuredClone(site.index);
  index.bundles[0]!.url = url(index.bundles[0]!);
  return index;
}
const bundleOf = (path: string) => site.index.bundles.find((b) => b.sha256 === site.index.files.find((f) => f.path === path)!.bundle)!;

describe('the token is fixed to one origin before any request', () => {
  test('index given as an object naming a bundle on another origin: refused at open, and the token went nowhere', async () => {
    const content = await serve();
    const foreign = await serve();
    const index = indexWithBundleAt((bundle) => `${foreign.origin}/${bundle.url}`);
    const error = await IndexedAssetSource.open({
      index,
      baseUrl: `${content.origin}/`,
      fetch: tokenAuthorizedFetch({ token: 'secret' }),
    }).catch((e) => e);
    expect(error).toBeInstanceOf(OriginNotAllowedError);
    expect(error).toMatchObject({ name: 'OriginNotAllowedError', code: 'E_ORIGIN', url: index.bundles[0]!.url });
    expect(error.message).toContain('bundles[0].url');
    expect(foreign.requests).toHaveLength(0);
    expect(content.requests).toHaveLength(0);
  });

  test('with allowOrigins listing a CDN, the index object reads from it, and the token stays on the baseUrl origin', async () => {
    const content = await serve();
    const cdn = await serve();
    const path = firstPath();
    const index = indexWithBundleAt((bundle) => `${cdn.origin}/${bundle.url}`);
    expect(bundleOf(path).sha256).toBe(index.bundles[0]!.sha256);
    const source = await IndexedAssetSource.open({
      index,
      baseUrl: `${content.origin}/`,
      allowOrigins: [cdn.origin],
      fetch: tokenAuthorizedFetch({ token: 'secret' }),
    });
    // The CDN bundle is the first request this source makes: it must not fix the token's origin.
    expect(await source.read(path)).toEqual(site.files.get(path));
    const onContent = [...site.files.keys()].find((p) => bundleOf(p).sha256 !== index.bundles[0]!.sha256)!;
    expect(await source.read(onContent)).toEqual(site.files.get(onContent));
    expect(authorizations(cdn)).toEqual([[`/${bundleOf(path).url}`, undefined]]);
    expect(authorizations(content)).toEqual([[`/${bundleOf(onContent).url}`, 'Bearer secret']]);
  });

  test("the token follows the index URL's origin, not the first bundle's", async () => {
    const content = await serve();
    const cdn = await serve();
    const source = await IndexedAssetSource.open({
      indexUrl: `${content.origin}/project.index.json`,
      allowOrigins: [cdn.origin],
      fetch: tokenAuthorizedFetch({ token: 't' }),
    });
    expect(source.indexUrl).toBe(`${content.origin}/project.index.json`);
    expect(authorizations(content)).toEqual([['/project.index.json', 'Bearer t']]);
  });

  test('the origin option wins over the index URL', async () => {
    const content = await serve();
    const tokenHost = await serve();
    await IndexedAssetSource.open({
      indexUrl: `${content.origin}/project.index.json`,
      fetch: tokenAuthorizedFetch({ token: 't', origin: tokenHost.origin }),
    });
    expect(authorizations(content)).toEqual([['/project.index.json', undefined]]);
  });

  test('an unbound token fetch refuses a request outside open, and open refuses it with no URL to bind to', async () => {
    const content = await serve();
    const unbound = tokenAuthorizedFetch({ token: 't' });
    const error = await unbound(`${content.origin}/project.index.json`).catch((e) => e);
    expect(error).toBeInstanceOf(TokenOriginError);
    expect(error).toMatchObject({ code: 'E_TOKEN_ORIGIN', url: `${content.origin}/project.index.json` });
    expect(content.requests).toHaveLength(0);
    const absolute = structuredClone(site.index);
    for (const bundle of absolute.bundles) bundle.url = `${content.origin}/${bundle.url}`;
    await expect(IndexedAssetSource.open({ index: absolute, fetch: unbound })).rejects.toBeInstanceOf(TokenOriginError);
    // bindTokenOrigin makes a bound copy; the unbound one stays unbound.
    const bound = bindTokenOrigin(unbound, content.origin);
    expect((await bound(`${content.origin}/project.index.json`)).status).toBe(200);
    expect(authorizations(content)).toEqual([['/project.index.json', 'Bearer t']]);
    await expect(unbound(`${content.origin}/x`)).rejects.toBeInstanceOf(TokenOriginError);
  });
});

describe('redirects', () => {
  test('a bundle that 302s to another origin (allowed) is read there without the token', async () => {
    const cdn = await serve();
    const path = firstPath();
    const bundle = bundleOf(path);
    const received: IncomingHttpHeaders[] = [];
    const content = createServer((request, response) => {
      received.push(request.headers);
      const url = request.url ?? '/';
      if (url === '/project.index.json') {
        const body = site.resources.get(url)!;
        return void response.writeHead(200, { 'Content-Length': body.length }).end(body);
      }
      response.writeHead(302, { Location: `${cdn.origin}${url}`, 'Content-Length': 0 }).end();
    });
    await new Promise<void>((listening) => content.listen(0, '127.0.0.1', listening));
    const origin = `http://127.0.0.1:${(content.address() as AddressInfo).port}`;
    try {
      const source = await IndexedAssetSource.open({
        indexUrl: `${origin}/project.index.json`,
        fetch: tokenAuthorizedFetch({ token: 'secret' }),
      });
      expect(await source.read(path)).toEqual(site.files.get(path));
      expect(received.map((headers) => headers.authorization)).toEqual(['Bearer secret', 'Bearer secret']);
      expect(authorizations(cdn)).toEqual([[`/${bundle.url}`, undefined]]);
    } finally {
      content.closeAllConnections();
      await new Promise((closed) => content.close(closed));
    }
  });
});

describe('an index names only origins the caller allowed', () => {
  test('a bundle URL on another local port is refused unless allowOrigins lists it', async () => {
    const content = await serve();
    const other = await serve();
    const index = indexWithBundleAt((bundle) => `${other.origin}/${bundle.url}`);
    const indexed = new Map(site.resources).set('/project.index.json', new TextEncoder().encode(JSON.stringify(index)));
    const server = await serve(indexed);
    const refused = await IndexedAssetSource.open({ indexUrl: `${server.origin}/project.index.json` }).catch((e) => e);
    expect(refused).toMatchObject({ name: 'OriginNotAllowedError', code: 'E_ORIGIN' });
    const allowed = await IndexedAssetSource.open({ indexUrl: `${server.origin}/project.index.json`, allowOrigins: [other.origin] });
    const path = [...site.files.keys()].find((p) => bundleOf(p).sha256 === index.bundles[0]!.sha256)!;
    expect(await allowed.read(path)).toEqual(site.files.get(path));
    expect(other.count(`/${bundleOf(path).url}`)).toBe(1);
    expect(content.requests).toHaveLength(0);
  });

  test.each([
    ['file:', 'file:///etc/passwd'],
    ['data:', 'data:application/octet-stream;base64,AAAA'],
    ['javascript:', 'javascript:alert(1)'],
    ['ftp:', 'ftp://127.0.0.1/b.awkb'],
  ])('a %s bundle URL is refused at open, with no request made', async (_, url) => {
    const content = await serve();
    const error = await IndexedAssetSource.open({ index: indexWithBundleAt(() => url), baseUrl: `${content.origin}/` }).catch((e) => e);
    expect(error).toBeInstanceOf(OriginNotAllowedError);
    expect(error.message).toMatch(/bundles\[0\]\.url.*not an http\(s\) URL/);
    expect(content.requests).toHaveLength(0);
  });

  test('a loose file URL elsewhere is refused too, naming the file', async () => {
    const content = await serve();
    const loose = {
      formatVersion: 2,
      rootPath: '/p',
      files: [{ path: 'a.bin', sizeBytes: 1, sha256: 'a'.repeat(64), url: 'https://cdn.example/a.bin' }],
    };
    const error = await IndexedAssetSource.open({ index: loose, baseUrl: `${content.origin}/` }).catch((e) => e);
    expect(error).toMatchObject({ code: 'E_ORIGIN', path: 'a.bin', url: 'https://cdn.example/a.bin' });
    expect(error.message).toContain('files[0].url');
  });

  test('allowOrigins entries must be origins', async () => {
    await expect(
      IndexedAssetSource.open({ index: site.index, baseUrl: 'http://127.0.0.1:1/', allowOrigins: ['not a url'] }),
    ).rejects.toThrow(/allowOrigins\[0\]/);
  });
});
