import type { SandboxInfo } from '#shared/sandboxes/model.ts';
import { readdirSync, readFileSync } from 'node:fs';
import type { TestStack } from '#test/helpers/stack.ts';
import { waitFor } from '#test/helpers/wait.ts';

/** The sandbox as GET /api/v1/sandboxes?id= shows it (null when unknown). */
export async function getSandbox(stack: TestStack, id: string, key?: string): Promise<SandboxInfo | null> {
  const res = await stack.call('GET', `/api/v1/sandboxes?id=${id}`, { key });
  if (res.status !== 200) throw new Error(`GET sandbox: ${res.status} ${res.text}`);
  return res.body[0];
}

export function waitForSandboxStatus(
  stack: TestStack,
  id: string,
  status: string,
  key?: string,
  timeoutMs?: number,
): Promise<SandboxInfo> {
  return waitFor(
    `sandbox ${id} to be ${status}`,
    async () => {
      const s = await getSandbox(stack, id, key);
      return s?.status === status ? s : undefined;
    },
    { timeoutMs: timeoutMs },
  );
}

/** The environment a process was started with, from /proc (Linux). */
export function processEnv(pid: number): Record<string, string> | undefined {
  try {
    const raw = readFileSync(`/proc/${pid}/environ`, 'utf8');
    return Object.fromEntries(
      raw
        .split('\0')
        .filter(Boolean)
        .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
    );
  } catch {
    return undefined;
  }
}

/** Every live process on this machine started with SANDBOX_ID=<id>: what the OS sees, not what the runtime believes. */
export function sandboxPids(sandboxId: string): number[] {
  const mine = new Map<number, number>(); // pid -> parent pid
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (/\) Z /.test(stat)) continue; // a zombie has exited
    } catch {
      continue;
    }
    if (processEnv(Number(entry))?.SANDBOX_ID === sandboxId)
      mine.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
  }
  // bubblewrap's processes and the program's own children (agent commands) share its environment:
  // count only the roots, whose parent is not one of them.
  return [...mine].filter(([, ppid]) => !mine.has(ppid)).map(([pid]) => pid);
}
