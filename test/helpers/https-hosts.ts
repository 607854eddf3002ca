import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type TLSSocket } from 'node:tls';

/**
 * Public https host names for a browser test, served on loopback, so a page sees the origins and URLs
 * a deployment gives it (`https://<name>`, `wss://<name>`, the name in `Origin` and `Host`) rather than
 * `http://127.0.0.1:<port>`. One TLS listener with a throwaway self-signed certificate for the names
 * (made by `openssl`) pipes each connection, by the name the client asked for (SNI), to a loopback port
 * that speaks plain HTTP; WebSocket upgrades pass through unchanged. ALPN offers nothing, so the
 * browser speaks HTTP/1.1 (the emulators behind have no HTTP/2). Chromium reaches the names with
 * `chromiumArgs` (its resolver maps each to the listener) and accepts the certificate with
 * `ignoreHTTPSErrors` (test/helpers/browser.ts).
 */
export interface HttpsHosts {
  /** The listener's port on 127.0.0.1. */
  port: number;
  /** `--host-resolver-rules` mapping each name to the listener. */
  chromiumArgs: string[];
  /** Connections piped, per name (a test can tell the browser really went through a name). */
  connections: Record<string, number>;
  close(): Promise<void>;
}

/** `hosts`: a name (`api.example.test`) -> the loopback port serving it over plain HTTP. */
export async function startHttpsHosts(hosts: Record<string, number>): Promise<HttpsHosts> {
  const names = Object.keys(hosts);
  const dir = mkdtempSync(join(tmpdir(), 'acs-https-hosts-'));
  let key: Buffer;
  let cert: Buffer;
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '1',
        '-subj',
        `/CN=${names[0]}`,
        '-addext',
        `subjectAltName=${names.map((n) => `DNS:${n}`).join(',')}`,
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ],
      { stdio: 'pipe' },
    );
    key = readFileSync(join(dir, 'key.pem'));
    cert = readFileSync(join(dir, 'cert.pem'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const connections: Record<string, number> = Object.fromEntries(names.map((n) => [n, 0]));
  const open = new Set<Socket>();
  const server = createServer({ key, cert }, (socket: TLSSocket) => {
    const name = typeof socket.servername === 'string' ? socket.servername : '';
    const port = hosts[name];
    if (!port) return void socket.destroy();
    connections[name]! += 1;
    const upstream = connect(port, '127.0.0.1');
    for (const s of [socket, upstream]) {
      open.add(s);
      s.once('close', () => open.delete(s));
    }
    const end = () => {
      socket.destroy();
      upstream.destroy();
    };
    socket.on('error', end);
    upstream.on('error', end);
    socket.pipe(upstream).pipe(socket);
  });
  // A browser's failed handshake (none expected) must not throw in the test process.
  server.on('tlsClientError', () => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    chromiumArgs: [`--host-resolver-rules=${names.map((n) => `MAP ${n} 127.0.0.1:${port}`).join(',')}`],
    connections,
    close: async () => {
      for (const s of open) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
