import { ConfigError, loadConfig } from '../../src/config/config';

describe('configuration: slow clients and upload limits', () => {
  it('defaults: short header and body limits, a longer upload limit, keep-alive past a load balancer\'s 60 s', () => {
    const c = loadConfig({});
    expect([c.headersTimeoutMs, c.bodyTimeoutMs, c.uploadTimeoutMs, c.keepAliveTimeoutMs, c.uploadRatePerMinute]).toEqual([20_000, 30_000, 600_000, 65_000, 60]);
  });

  it('reads each from its variable', () => {
    const c = loadConfig({ KB_HEADERS_TIMEOUT_MS: '1000', KB_BODY_TIMEOUT_MS: '2000', KB_UPLOAD_TIMEOUT_MS: '3000', KB_KEEP_ALIVE_TIMEOUT_MS: '4000', KB_UPLOAD_RATE_PER_MINUTE: '5' });
    expect([c.headersTimeoutMs, c.bodyTimeoutMs, c.uploadTimeoutMs, c.keepAliveTimeoutMs, c.uploadRatePerMinute]).toEqual([1000, 2000, 3000, 4000, 5]);
  });

  it.each(['KB_HEADERS_TIMEOUT_MS', 'KB_BODY_TIMEOUT_MS', 'KB_UPLOAD_TIMEOUT_MS', 'KB_KEEP_ALIVE_TIMEOUT_MS', 'KB_UPLOAD_RATE_PER_MINUTE'])('refuses %s that is not a positive integer', (name) => {
    for (const bad of ['0', '-5', 'soon']) {
      expect(() => loadConfig({ [name]: bad })).toThrow(ConfigError);
      expect(() => loadConfig({ [name]: bad })).toThrow(name);
    }
  });
});
