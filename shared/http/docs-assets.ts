import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The Swagger UI files `/docs` loads, from the npm package `swagger-ui-dist`, served by us (works offline). */
export const DOCS_ASSETS = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
} as const;
export type DocsAsset = keyof typeof DOCS_ASSETS;
/** Where a Lambda bundle carries them (infra/bundle.ts copies them next to the bundle). */
export const BUNDLED_DOCS_DIR = 'swagger-ui';

const cache = new Map<DocsAsset, string>();

/** The folder holding the files: beside the bundle on AWS, else the installed package. */
function assetDir(): string {
  const bundled = join(dirname(fileURLToPath(import.meta.url)), BUNDLED_DOCS_DIR);
  if (existsSync(bundled)) return bundled;
  return dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
}

export function docsAsset(name: string): { body: string; contentType: string } | undefined {
  if (!Object.hasOwn(DOCS_ASSETS, name)) return undefined;
  const asset = name as DocsAsset;
  let body = cache.get(asset);
  if (body === undefined) {
    body = readFileSync(join(assetDir(), asset), 'utf8');
    cache.set(asset, body);
  }
  return { body, contentType: DOCS_ASSETS[asset] };
}

const escapeHtml = (s: string) =>
  s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

/** `/docs`: Swagger UI over `/openapi.json`; every path is relative, so it works under any base URL. */
export function docsPage(title: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title><link rel="stylesheet" href="docs/assets/swagger-ui.css"></head>
<body><div id="swagger-ui"></div>
<script src="docs/assets/swagger-ui-bundle.js"></script>
<script>window.ui = SwaggerUIBundle({ url: 'openapi.json', dom_id: '#swagger-ui', deepLinking: true, tryItOutEnabled: false });</script>
</body></html>`;
}
