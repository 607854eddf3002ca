import { bundleStats } from '#infra/bundle.ts';
for (const e of process.argv.slice(2)) {
  const s = await bundleStats(e, 15);
  console.log(
    e.padEnd(30),
    (s.bytes / 1024).toFixed(0).padStart(5),
    'KB',
    String(s.loadMs).padStart(6),
    'ms',
    String(s.cpuMs).padStart(6),
    'cpu',
  );
}
