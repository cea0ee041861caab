import qrcode from 'qrcode-generator';

/**
 * A QR code of `text` drawn as one SVG path (dark modules only, a 4-module quiet zone), so a
 * phone's authenticator app can scan the set-up link. Built from qrcode-generator's module
 * matrix, never from markup strings (nothing is injected as HTML).
 */
export function QrCode({ text, label, size = 192 }: { text: string; label: string; size?: number }) {
  const qr = qrcode(0, 'M');
  qr.addData(text, 'Byte');
  qr.make();
  const n = qr.getModuleCount();
  const quiet = 4;
  let d = '';
  for (let row = 0; row < n; row++) {
    for (let col = 0; col < n; ) {
      if (!qr.isDark(row, col)) {
        col++;
        continue;
      }
      let run = 1;
      while (col + run < n && qr.isDark(row, col + run)) run++;
      d += `M${col + quiet} ${row + quiet}h${run}v1h-${run}z`;
      col += run;
    }
  }
  const total = n + 2 * quiet;
  return (
    <svg class="qr" role="img" aria-label={label} width={size} height={size} viewBox={`0 0 ${total} ${total}`} shape-rendering="crispEdges" data-testid="totp-qr">
      <rect width={total} height={total} fill="#fff" />
      <path d={d} fill="#000" />
    </svg>
  );
}
