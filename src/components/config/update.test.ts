import { settings } from './testSettings';
import {
  addHeader,
  removeHeader,
  renameHeader,
  setHeaderSecure,
  setHeaderValue,
  withConnectionMode,
  withSecretReset,
} from './update';

const secureRow = { name: 'X-Key', value: '', secure: true };

describe('settings updates', () => {
  it('never mutates the settings they are given', () => {
    const before = settings(
      { httpHeaders: [{ name: 'X-A', value: '1', secure: false }] },
      { fields: { password: true } }
    );
    const snapshot = JSON.stringify(before);
    addHeader(before);
    setHeaderSecure(before, 0, true);
    withSecretReset(before, 'password');
    withConnectionMode(before, { protocol: 'http' });
    expect(JSON.stringify(before)).toBe(snapshot);
  });

  describe('withConnectionMode', () => {
    it.each([
      [{ protocol: 'native' as const }, { protocol: 'http' as const }, 9000, 8123],
      [{ protocol: 'http' as const }, { secure: true }, 8123, 8443],
      [{ protocol: 'native' as const, secure: true }, { secure: false }, 9440, 9000],
      [{ protocol: 'http' as const, secure: true }, { protocol: 'native' as const }, 8443, 9440],
    ])('from %j with %j moves port %d to %d', (from, change, port, expected) => {
      expect(withConnectionMode(settings({ ...from, port }), change).jsonData.port).toBe(expected);
    });

    it('leaves a custom or unset port alone', () => {
      expect(withConnectionMode(settings({ port: 19000 }), { protocol: 'http' }).jsonData.port).toBe(19000);
      expect(withConnectionMode(settings({}), { protocol: 'http' }).jsonData.port).toBeUndefined();
    });
  });

  describe('renameHeader', () => {
    it('moves a secret typed since the last save to the new name', () => {
      const s = settings({ httpHeaders: [secureRow] }, { data: { 'secureHttpHeaders.X-Key': 'typed' } });
      const next = renameHeader(s, 0, 'X-Token');
      expect(next.jsonData.httpHeaders).toEqual([{ ...secureRow, name: 'X-Token' }]);
      expect(next.secureJsonData).toEqual({ 'secureHttpHeaders.X-Token': 'typed' });
    });

    it('resets a stored secret, which cannot be read back', () => {
      const s = settings({ httpHeaders: [secureRow] }, { fields: { 'secureHttpHeaders.X-Key': true } });
      const next = renameHeader(s, 0, 'X-Token');
      expect(next.secureJsonFields).toEqual({ 'secureHttpHeaders.X-Key': false });
      expect(next.secureJsonData).toEqual({ 'secureHttpHeaders.X-Key': '' });
    });

    it('touches no secret of a plain header', () => {
      const s = settings({ httpHeaders: [{ name: 'X-A', value: '1', secure: false }] });
      const next = renameHeader(s, 0, 'X-B');
      expect(next.jsonData.httpHeaders).toEqual([{ name: 'X-B', value: '1', secure: false }]);
      expect(next.secureJsonData).toBeUndefined();
    });
  });

  describe('setHeaderSecure', () => {
    it('turning a header plain drops its secret and keeps the row', () => {
      const s = settings({ httpHeaders: [secureRow] }, { data: { 'secureHttpHeaders.X-Key': 'typed' } });
      const next = setHeaderSecure(s, 0, false);
      expect(next.jsonData.httpHeaders).toEqual([{ name: 'X-Key', value: '', secure: false }]);
      expect(next.secureJsonData).toEqual({});
      expect(setHeaderValue(next, 0, 'visible').jsonData.httpHeaders?.[0].value).toBe('visible');
    });

    it('turning a stored secure header plain resets the stored secret', () => {
      const s = settings({ httpHeaders: [secureRow] }, { fields: { 'secureHttpHeaders.X-Key': true } });
      const next = setHeaderSecure(s, 0, false);
      expect(next.secureJsonFields['secureHttpHeaders.X-Key']).toBe(false);
      expect(next.secureJsonData).toEqual({ 'secureHttpHeaders.X-Key': '' });
    });
  });

  it('removing a secure header with a typed secret sends nothing for it', () => {
    const s = settings(
      { httpHeaders: [{ name: 'X-A', value: '1', secure: false }, secureRow] },
      { data: { password: 'p', 'secureHttpHeaders.X-Key': 'typed' } }
    );
    const next = removeHeader(s, 1);
    expect(next.jsonData.httpHeaders).toEqual([{ name: 'X-A', value: '1', secure: false }]);
    expect(next.secureJsonData).toEqual({ password: 'p' });
  });
});
