import { MAX_WITHHELD, parseWithheld } from '../../web/src/withheld';

/** The console's reading of KB-Workspaces-Withheld(-Reasons) (web/src/withheld.ts): untrusted text, never an exception. */
describe('console: withheld workspaces headers', () => {
  it('reads what the server sends', () => {
    expect(parseWithheld('2', 'EMAIL_NOT_VERIFIED=1, MFA_ENROLMENT_REQUIRED=1')).toEqual({
      count: 2,
      // The address first: a second factor is set up on a confirmed address only.
      reasons: [
        { reason: 'EMAIL_NOT_VERIFIED', count: 1 },
        { reason: 'MFA_ENROLMENT_REQUIRED', count: 1 },
      ],
    });
    expect(parseWithheld('3', 'MFA_ENROLMENT_REQUIRED=3')).toEqual({ count: 3, reasons: [{ reason: 'MFA_ENROLMENT_REQUIRED', count: 3 }] });
  });

  it('tells of nothing when the count is absent, 0, malformed or absurd', () => {
    for (const count of [null, undefined, '', '0', ' 0 ', '-1', '1.5', '1e3', '0x10', 'two', '<b>1</b>', '1, 2', String(MAX_WITHHELD + 1), '9'.repeat(400)]) {
      expect(parseWithheld(count, 'MFA_ENROLMENT_REQUIRED=1')).toBeNull();
    }
    expect(parseWithheld(String(MAX_WITHHELD), null)).toEqual({ count: MAX_WITHHELD, reasons: [{ reason: 'OTHER', count: MAX_WITHHELD }] });
  });

  it('tells unknown, malformed or missing reasons generically, so the count always adds up', () => {
    expect(parseWithheld('2', null)?.reasons).toEqual([{ reason: 'OTHER', count: 2 }]);
    expect(parseWithheld('2', 'SOMETHING_NEW=1, MFA_ENROLMENT_REQUIRED=1')?.reasons).toEqual([
      { reason: 'MFA_ENROLMENT_REQUIRED', count: 1 },
      { reason: 'OTHER', count: 1 },
    ]);
    expect(parseWithheld('2', '<script>alert(1)</script>=1; MFA_ENROLMENT_REQUIRED')?.reasons).toEqual([{ reason: 'OTHER', count: 2 }]);
    expect(parseWithheld('1', 'x'.repeat(100_000))?.reasons).toEqual([{ reason: 'OTHER', count: 1 }]);
    expect(parseWithheld('1', ',,,=,MFA_ENROLMENT_REQUIRED=,=1')?.reasons).toEqual([{ reason: 'OTHER', count: 1 }]);
    // Repeated codes add up; a reason count of 0 is ignored.
    expect(parseWithheld('3', 'MFA_ENROLMENT_REQUIRED=1,MFA_ENROLMENT_REQUIRED=2, EMAIL_NOT_VERIFIED=0')?.reasons).toEqual([{ reason: 'MFA_ENROLMENT_REQUIRED', count: 3 }]);
  });

  it('cuts reasons claiming more than the count down to it', () => {
    expect(parseWithheld('1', 'EMAIL_NOT_VERIFIED=5, MFA_ENROLMENT_REQUIRED=7')).toEqual({ count: 1, reasons: [{ reason: 'EMAIL_NOT_VERIFIED', count: 1 }] });
    expect(parseWithheld('3', 'EMAIL_NOT_VERIFIED=2, MFA_ENROLMENT_REQUIRED=7')?.reasons).toEqual([
      { reason: 'EMAIL_NOT_VERIFIED', count: 2 },
      { reason: 'MFA_ENROLMENT_REQUIRED', count: 1 },
    ]);
    expect(parseWithheld('2', 'MFA_ENROLMENT_REQUIRED=99999999999999')?.reasons).toEqual([{ reason: 'OTHER', count: 2 }]);
  });

  it('never throws, whatever the values', () => {
    const nasty = ['\u0000', '\uffff'.repeat(10), '=', ',', ' '.repeat(5000), '__proto__=1', 'constructor=1, toString=2', `${'A'.repeat(65)}=1`];
    for (const a of nasty) for (const b of nasty) expect(() => parseWithheld(a, b)).not.toThrow();
    expect(parseWithheld('2', '__proto__=1, constructor=1')?.reasons).toEqual([{ reason: 'OTHER', count: 2 }]);
  });
});
