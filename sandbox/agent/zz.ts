import { Terminal } from '#sandbox/agent/tools/terminal.ts';
const t = new Terminal({ cwd: '/tmp', env: () => ({ PATH: process.env.PATH! }), maxOutputChars: 3000, noChangeTimeoutMs: 30000, hardTimeoutMs: 50000, maxTimeoutMs: 50000 });
const times: number[] = [];
for (let i = 0; i < 40; i++) { const s = performance.now(); await t.run({ command: `echo step ${i}; seq 1 30 | tr '\\n' ' '` }); times.push(performance.now() - s); }
times.sort((a, b) => a - b); console.log('terminal p50', times[20]!.toFixed(1), 'max', times.at(-1)!.toFixed(1));
await t.close();
