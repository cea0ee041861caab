/** A float32 copy of `v` scaled to unit length (a zero vector stays zero). */
export function unitVector(v: Float32Array | number[]): Float32Array {
  const out = Float32Array.from(v);
  let s = 0;
  for (let i = 0; i < out.length; i++) s += out[i] * out[i];
  if (s > 0) {
    const inv = 1 / Math.sqrt(s);
    for (let i = 0; i < out.length; i++) out[i] *= inv;
  }
  return out;
}
