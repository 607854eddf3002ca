/**
 * The header CloudFront sets to the viewer's address and source port (`198.51.100.10:46532`; IPv6
 * without brackets). The distribution's origin request policy forwards it (infra/constructs/front.ts);
 * CloudFront replaces any value a viewer sends, and the local gateway, with no CloudFront in front,
 * drops it.
 */
export const VIEWER_ADDRESS_HEADER = 'cloudfront-viewer-address';

/**
 * The caller's address as limits per address count it, on what takes no credential (sign-in): the
 * viewer's as CloudFront saw it, else the connection's source. Never `X-Forwarded-For`, whose first
 * entry is whatever the client wrote. An IPv6 address counts as its /64 (one customer's network
 * usually holds a whole /64). On AWS a caller who reaches the execute-api host directly, around
 * CloudFront, can write the header too: the account-level throttle is the backstop there
 * (docs/architecture.md, "Limits").
 */
export function clientAddress(headers: Record<string, string | undefined>, sourceIp: string | undefined): string {
  const viewer = headers[VIEWER_ADDRESS_HEADER];
  const address = viewer ? viewer.slice(0, Math.max(0, viewer.lastIndexOf(':'))) : (sourceIp ?? '');
  if (!address) return 'unknown';
  return address.includes(':') && !address.startsWith('::ffff:')
    ? ipv6Slash64(address)
    : address.replace(/^::ffff:/, '');
}

/** The /64 of an IPv6 address, as `a:b:c:d::/64` (the first four groups, `::` expanded). */
function ipv6Slash64(address: string): string {
  const [head = '', tail] = address.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups =
    tail === undefined ? left : [...left, ...Array(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right];
  return `${groups
    .slice(0, 4)
    .map((g) => g.toLowerCase().replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}
