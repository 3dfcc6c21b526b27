// The dashboard's guards as plain functions: which hosts are loopback, which Host headers a
// loopback bind accepts, and the token check's two refusals.
import { describe, expect, it } from 'vitest';
import {
  allowedHosts,
  checkBind,
  checkHost,
  checkOrigin,
  checkToken,
  isLoopbackHost,
} from '../src/internal/dashboard/guard.js';

describe('dashboard guards', () => {
  it('only loopback names and addresses count as loopback', () => {
    for (const host of ['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]', '::ffff:127.0.0.1'])
      expect(isLoopbackHost(host), host).toBe(true);
    for (const host of ['0.0.0.0', '::', '192.168.1.20', '10.0.0.1', 'example.com', '128.0.0.1'])
      expect(isLoopbackHost(host), host).toBe(false);
    expect(() => checkBind('::', false)).toThrow(
      expect.objectContaining({ code: 'REMOTE_BIND_REFUSED' }),
    );
    expect(() => checkBind('::', true)).not.toThrow();
  });

  it('a loopback bind accepts its own Host names with the port, and nothing else', () => {
    const allowed = allowedHosts('127.0.0.1', 7380);
    for (const host of ['127.0.0.1:7380', 'localhost:7380', '[::1]:7380', 'LOCALHOST:7380'])
      expect(() => checkHost(host, allowed), host).not.toThrow();
    for (const host of ['evil.example:7380', '127.0.0.1:7381', '127.0.0.1', undefined])
      expect(() => checkHost(host, allowed), String(host)).toThrow(
        expect.objectContaining({ code: 'ORIGIN_REFUSED' }),
      );
    expect(allowedHosts('0.0.0.0', 7380)).toBe('any');
  });

  it("a browser's Origin must be the dashboard's own; a client without one passes on", () => {
    const host = '127.0.0.1:7380';
    expect(() => checkOrigin({ origin: undefined, host, fetchSite: undefined })).not.toThrow();
    expect(() =>
      checkOrigin({ origin: 'http://127.0.0.1:7380', host, fetchSite: 'same-origin' }),
    ).not.toThrow();
    for (const origin of ['http://evil.example', 'null', 'https://127.0.0.1:7380'])
      expect(() => checkOrigin({ origin, host, fetchSite: undefined }), origin).toThrow(
        expect.objectContaining({ code: 'ORIGIN_REFUSED' }),
      );
    expect(() => checkOrigin({ origin: undefined, host, fetchSite: 'same-site' })).toThrow(
      expect.objectContaining({ code: 'ORIGIN_REFUSED' }),
    );
  });

  it('the token: missing is TOKEN_REQUIRED, wrong (even a prefix) is TOKEN_INVALID', () => {
    const token = 'the-right-token-0123456789';
    expect(() => checkToken(`Bearer ${token}`, token)).not.toThrow();
    expect(() => checkToken(`bearer ${token}`, token)).not.toThrow();
    expect(() => checkToken(undefined, token)).toThrow(
      expect.objectContaining({ code: 'TOKEN_REQUIRED' }),
    );
    expect(() => checkToken(token, token)).toThrow(
      expect.objectContaining({ code: 'TOKEN_REQUIRED' }),
    );
    for (const given of ['Bearer the-right-token', `Bearer ${token}x`])
      expect(() => checkToken(given, token), given).toThrow(
        expect.objectContaining({ code: 'TOKEN_INVALID' }),
      );
  });
});
