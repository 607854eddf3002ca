import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, readlinkSync, realpathSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';

/**
 * How a local sandbox process is contained: bubblewrap on Linux, Seatbelt (`sandbox-exec`) on macOS,
 * or not at all where neither runs (then only the local user's own sandboxes start; see
 * ProcessSandboxRuntime).
 */
export type Containment = 'bwrap' | 'seatbelt' | 'none';

/** Where the pre-built sandbox program is mounted inside a bubblewrap sandbox. */
export const BWRAP_PROGRAM_DIR = '/opt/acs-sandbox';

/** What a contained sandbox may see: everything else of the machine stays out of view. */
export interface SandboxView {
  /** Read-write: the workspace and the sandbox's home (its tmux socket, git config, caches). */
  workspace: string;
  home: string;
  /** Read-write scratch space (macOS; bubblewrap gives a private tmpfs /tmp instead). */
  tmp: string;
  /** Read-only: the pre-built sandbox program (directory of main.mjs), when the spec runs it. */
  programDir?: string;
  /** Never visible, even when a system directory holds them (the data dir, the checkout). */
  hidden: string[];
}

/** The system directories a sandbox reads (read-only). */
const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/etc'];

const within = (child: string, parent: string) => {
  const rel = relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
};

/** The Node installation the server runs on (its prefix holds npm/npx), when it is not under /usr. */
function nodePrefix(execPath = process.execPath): string {
  return dirname(dirname(realpathSync(execPath)));
}

/**
 * bubblewrap's arguments (before the command): a read-only system, the workspace and home
 * read-write at their own paths, a private /tmp, /proc of its own pid namespace, its own ipc and
 * uts namespaces, and the program read-only. Loopback stays shared: that is how the program reaches
 * the bridge (see docs/architecture.md). The environment is not set here: bwrap is spawned with
 * exactly the sandbox's environment and passes it on, so the enrollment token never appears in a
 * command line (which every local user can read with `ps`, unlike /proc/<pid>/environ).
 */
export function bwrapArgs(view: SandboxView): string[] {
  const args: string[] = [];
  for (const dir of SYSTEM_DIRS) {
    let stat: ReturnType<typeof lstatSync>;
    try {
      stat = lstatSync(dir);
    } catch {
      continue;
    }
    if (stat.isSymbolicLink()) args.push('--symlink', readlinkSync(dir), dir);
    else if (stat.isDirectory()) args.push('--ro-bind', dir, dir);
  }
  // resolv.conf may point outside /etc (systemd-resolved): DNS must keep working.
  try {
    const resolv = realpathSync('/etc/resolv.conf');
    if (!SYSTEM_DIRS.some((d) => within(resolv, d))) args.push('--ro-bind', resolv, resolv);
  } catch {
    // No resolver configuration: nothing to add.
  }
  const prefix = nodePrefix();
  if (!SYSTEM_DIRS.some((d) => within(prefix, d))) args.push('--ro-bind', prefix, prefix);
  // A data dir or checkout below a system directory (e.g. /opt/acs) is covered by an empty tmpfs.
  for (const path of view.hidden) {
    if (SYSTEM_DIRS.some((d) => within(resolve(path), d))) args.push('--tmpfs', resolve(path));
  }
  args.push('--tmpfs', '/tmp', '--proc', '/proc', '--dev', '/dev');
  args.push('--bind', view.workspace, view.workspace, '--bind', view.home, view.home);
  if (view.programDir) args.push('--ro-bind', view.programDir, BWRAP_PROGRAM_DIR);
  // The root (where bwrap made the mount points) read-only: only the workspace, home and /tmp take writes.
  args.push('--remount-ro', '/');
  args.push('--unshare-pid', '--unshare-ipc', '--unshare-uts', '--hostname', 'sandbox', '--die-with-parent');
  args.push('--chdir', view.workspace);
  return args;
}

/**
 * The Seatbelt profile (macOS `sandbox-exec -f <profile> -D NAME=value ...`): deny by default; read
 * the system, the Node installation and the program; read and write the workspace, home and tmp;
 * run processes and use the network (the bridge on loopback, the LLM and git on the internet).
 * Other processes (the server's environment, other sandboxes) are out of reach: `process-info`
 * and signals are allowed for this sandbox's own processes only. Paths come in as parameters, so
 * the text is constant (and tested as text: it cannot run on Linux).
 */
export const SEATBELT_PROFILE = `(version 1)
(deny default)
(allow process-exec process-fork)
(allow signal (target same-sandbox))
(allow process-info* (target same-sandbox))
(allow sysctl-read)
(allow mach-lookup)
(allow ipc-posix-shm)
(allow pseudo-tty)
(allow network-outbound network-inbound network-bind)
(allow file-read-metadata)
(allow file-read*
  (literal "/")
  (subpath "/usr") (subpath "/bin") (subpath "/sbin") (subpath "/System") (subpath "/Library")
  (subpath "/private/etc") (subpath "/private/var/db") (subpath "/opt/homebrew") (subpath "/dev")
  (subpath (param "NODE_PREFIX")) (subpath (param "PROGRAM_DIR")))
(allow file-read* file-write*
  (subpath (param "WORKSPACE")) (subpath (param "HOME")) (subpath (param "TMP"))
  (literal "/dev/null") (literal "/dev/tty") (regex #"^/dev/fd/") (regex #"^/dev/ttys"))
`;

/** `sandbox-exec` arguments (before the command) for a view. */
export function seatbeltArgs(view: SandboxView): string[] {
  const real = (p: string) => (existsSync(p) ? realpathSync(p) : p);
  const params = {
    WORKSPACE: real(view.workspace),
    HOME: real(view.home),
    TMP: real(view.tmp),
    NODE_PREFIX: nodePrefix(),
    // Without a program the parameter still needs a value: the workspace grants nothing new.
    PROGRAM_DIR: view.programDir ? real(view.programDir) : real(view.workspace),
  };
  return ['-p', SEATBELT_PROFILE, ...Object.entries(params).flatMap(([k, v]) => ['-D', `${k}=${v}`])];
}

let launcher: string[] | undefined;

/**
 * How to run bubblewrap so that it dies with the server even on `kill -9`: its --die-with-parent
 * covers what runs inside when bubblewrap dies, not bubblewrap itself, so `setpriv --pdeathsig`
 * (util-linux) gives bubblewrap that signal. Without setpriv the program still notices the server's
 * end on its stdin pipe; a spec's own program that ignores it could outlive a crashed server.
 */
export function bwrapLauncher(): string[] {
  launcher ??=
    spawnSync('setpriv', ['--pdeathsig', 'SIGKILL', '--', 'true'], { stdio: 'ignore', timeout: 5000 }).status === 0
      ? ['setpriv', '--pdeathsig', 'SIGKILL', '--', 'bwrap']
      : ['bwrap'];
  return launcher;
}

/** Whether bubblewrap can run here (installed and allowed to create namespaces). */
export function bwrapWorks(): boolean {
  const probe = spawnSync('bwrap', ['--ro-bind', '/', '/', '--unshare-pid', '--die-with-parent', 'true'], {
    stdio: 'ignore',
    timeout: 5000,
  });
  return probe.status === 0;
}

/** The best containment this machine offers. */
export function detectContainment(platform: NodeJS.Platform = process.platform): Containment {
  if (platform === 'linux') return bwrapWorks() ? 'bwrap' : 'none';
  if (platform === 'darwin') return existsSync('/usr/bin/sandbox-exec') ? 'seatbelt' : 'none';
  return 'none';
}

/** The line `npm start` prints when sandboxes run uncontained. */
export function uncontainedWarning(platform: NodeJS.Platform = process.platform): string {
  const how =
    platform === 'linux'
      ? 'install bubblewrap (Debian/Ubuntu: sudo apt-get install bubblewrap; Fedora: sudo dnf install bubblewrap) and allow user namespaces'
      : platform === 'darwin'
        ? '/usr/bin/sandbox-exec is missing from this macOS'
        : 'sandbox containment exists on Linux (bubblewrap) and macOS (Seatbelt) only';
  return `WARNING: sandboxes run UNCONTAINED: the agent can read and write everything you can. To contain them, ${how}. Only the local user's own sandboxes start (--allow-uncontained for everyone's).`;
}

/** The directory holding a sandbox's private scratch space (macOS; inside its own directory). */
export const tmpDirOf = (sandboxDir: string) => join(sandboxDir, 'tmp');
