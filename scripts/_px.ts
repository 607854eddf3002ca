import { build } from 'esbuild';
import { esbuildOptions } from '#infra/bundle.ts';
for (const e of ['functions/sandboxes/start.ts', 'functions/conversations/legacy-create.ts']) {
  const res = await build({ ...(await esbuildOptions(e)), write: false, outdir: 'out' });
  console.log(e, Math.round(res.outputFiles[0]!.contents.length / 1024));
}
