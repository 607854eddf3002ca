import { describe, expect, it } from 'vitest';
import { clientAddress } from '#shared/http/client-address.ts';

describe('clientAddress', () => {
  it("takes CloudFront's viewer address without its port, else the source address; never X-Forwarded-For", () => {
    expect(clientAddress({ 'cloudfront-viewer-address': '198.51.100.10:46532' }, '10.0.0.1')).toBe('198.51.100.10');
    expect(clientAddress({ 'x-forwarded-for': '1.2.3.4, 5.6.7.8' }, '10.0.0.1')).toBe('10.0.0.1');
    expect(clientAddress({}, '::ffff:127.0.0.1')).toBe('127.0.0.1');
    expect(clientAddress({}, undefined)).toBe('unknown');
  });

  it('counts an IPv6 address as its /64, however it is written', () => {
    const a = clientAddress({ 'cloudfront-viewer-address': '2001:db8:0:12:aaaa::1:46532' }, undefined);
    const b = clientAddress({ 'cloudfront-viewer-address': '2001:0db8:0000:0012:ffff:1:2:3:443' }, undefined);
    expect(a).toBe('2001:db8:0:12::/64');
    expect(b).toBe(a);
    expect(clientAddress({}, '::1')).toBe('0:0:0:0::/64');
    expect(clientAddress({}, '2001:db8::')).toBe('2001:db8:0:0::/64');
  });
});
